"""A variant's report files written from its typed ``Summary``: ``summary.json``, the plots, ``summary.md`` and
``vllm_bench.json``.

Stage: report. Writing only: ``summary.json`` is ``jsontypes.to_json`` of the summary, the plots are
``plots.py``'s, ``summary.md`` is ``markdown.py``'s (linking the plots drawn), ``vllm_bench.json`` is
``vllm_format.py``'s. Every number in them was computed in ``aggregates/``.
"""

from __future__ import annotations

from typing import Any

import orjson

from orchestrate.report import plots
from orchestrate.report.jsontypes import to_json
from orchestrate.report.markdown import summary_md
from orchestrate.report.schema import Summary
from orchestrate.report.vllm_format import write_vllm_bench
from orchestrate.results import VariantPaths
from orchestrate.scenario.spec import LoadSpec


def write_reports(summary: Summary, paths: VariantPaths, records: Any = None, load: LoadSpec | None = None) -> None:
    """Write ``summary.json`` (machine), the plots, then ``summary.md`` (person) linking them, and
    ``vllm_bench.json`` (of ``load``, the load the result ran: its rate, users and stages)."""
    paths.summary_json.write_bytes(orjson.dumps(to_json(summary), default=str, option=orjson.OPT_INDENT_2) + b"\n")
    name = summary.variant
    found, sweep, steps = summary.capacity, summary.sweep, summary.ui_steps
    images = [p.name for p in (plots.capacity(found, paths.capacity_png) if found is not None else None,
                               plots.sweep([(name, sweep)], paths.sweep_png) if sweep is not None else None,
                               plots.sweep([(name, steps)], paths.ui_steps_png) if steps is not None else None,
                               plots.latency(summary, records, paths.plot_png),
                               plots.throughput(summary, paths.metrics, paths.throughput_png)) if p is not None]
    paths.summary_md.write_text(summary_md(summary, images))
    write_vllm_bench(summary, records, paths.vllm_bench_json, load, detailed=summary.save_detailed)
