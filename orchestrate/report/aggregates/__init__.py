"""Every aggregate of the report stage lives in this package: percentiles, rates and counts over many
records or samples, computed here and nowhere else. Each block of ``summary.json`` is returned as its type
in ``report/schema`` (``summary.py:build_summary`` makes the ``Summary`` of them), and the aggregates hand
each other typed blocks (the steady state its ``Goodput``, the energy the ``Tokens`` and ``SteadyState``).
None of them renders: the console's lines, ``summary.md`` and the plots are ``report/console.py``'s,
``markdown.py``'s and ``plots.py``'s (a search's one-sentence answer, ``capacity.sentence``, is a value of
``summary.json``). The rest of ``report/`` writes, formats and compares what these compute.

Stage: report. One kind a module:

- ``stats``: nearest-rank percentiles (weighted, or pooled from blocks), numeric columns, sums, rates.
- ``headline``: the headline block of ``summary.json`` (requests, duration, tokens, throughput, latency).
- ``chunks``: over chunk arrivals: pooled ITL gaps, output tokens per second, tokens within windows.
- ``concurrency``: each request's end, and the most requests in flight at once.
- ``client``: the load generators' self-check and Locust's own counts against the records.
- ``goodput``: the requests that met the scenario's SLOs, and their rate.
- ``accounting``: what became of every prompt asked for, the connections, when the server went down.
- ``pacing_figures``: an open-loop run's rates, lateness and unsent requests; a ramp's figures per stage.
- ``turns``: multi-turn replay per turn index, and the conversations.
- ``steadystate``: the steady-state window (the ramp and the drain left out) and the figures inside it.
- ``capacity``: a capacity search's answer: each probe judged, the boundary, what limited it, the cliff.
- ``sweep``: a sweep's block from its steps' own summaries, and two sweeps' speedups step by step.
- ``uisteps``: a web UI ramp as steps, each user level held with its own figures.
- ``host``: how busy the host was while a variant ran (foreign CPU, steal, other GPU users).
- ``servermetrics``: the server's ``metrics.jsonl``: memory peaks, counter growth, its counts vs the records.
- ``series``: report.html's curves: latency distributions, tokens and requests in flight over time.
- ``energy``: joules over the measured window from ``metrics.jsonl``'s power readings, tokens per joule.
- ``vllmstats``: vLLM's own estimators (numpy's mean, median, std, percentile), for ``vllm_bench.json``.
- ``recordsfile``: ``requests.jsonl`` read columnar (pyarrow), the frame every aggregate reads.
- ``chunkcolumn``: every record's chunk offsets in one shared buffer, handed out in blocks.
- ``blockstats``: exact order statistics of values too many to sort at once, read in blocks.
"""
