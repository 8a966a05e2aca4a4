"""The typed structure of ``summary.json``: frozen dataclasses, one module per group of blocks, each field
documented by the docstring below it.

Stage: report. ``Summary`` (``schema/summary.py``) is the whole file; ``report/jsontypes.py`` writes it
(``to_json``), reads it back (``from_json``), lists what a file holds that it does not declare
(``undeclared``) and walks its fields with their docstrings (``schema``). The blocks: ``common`` (percentile
shapes), ``headline``, ``steady`` (steady state, goodput), ``capacity``, ``server`` (``server.json``, the
server's counters, memory), ``machine`` (energy, host, client, workers, Locust's own count), ``pacing``
(arrivals, stages), ``turns``, ``sweep``, ``ui`` and ``runfacts`` (the run loop's blocks).
"""

from orchestrate.report.schema.summary import Summary

__all__ = ["Summary"]
