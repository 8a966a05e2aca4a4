"""Stage 3, load: the prompts (``prompts.py``), the Locust run (``locust_run.py``) and what is sampled beside it
(``sampler.py``, ``host_probe.py``), written as result files (``results.py`` names them).

Imports the scenario and the server stages; nothing of the report.
"""
