"""Stage 4, report: result files → ``summary.json`` (``summary.py``, its one home), every aggregate
(``aggregates/``), ``summary.md``/plots (``render.py``), comparisons (``compare*.py``).

Reads files only: ``tokenswarm report`` and ``compare`` import nothing of the server or load stages.
"""
