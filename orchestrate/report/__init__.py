"""Stage 4, report: result files → ``summary.json`` (``summary.py``, its one home; its types in ``schema/``),
every aggregate (``aggregates/``: they compute), the renderers of the typed summary (they render: the console's
lines in ``console.py``, ``summary.md`` in ``markdown.py``, every PNG in ``plots.py``, the files written by
``render.py``), comparisons (``compare*.py``) and ``report.html`` (``htmlreport.py``, ``charts.py``).

Reads files only: ``tokenswarm report`` and ``compare`` import nothing of the server or load stages.
"""
