"""The names of the files the Locust side writes: the records, and the files beside them.

Stage: load → records. The Locust side owns these names (it runs alone on worker hosts and under
plain ``locust``); the orchestrator's ``results.py`` builds its paths from them.
"""

RECORDS_FILE = "requests.jsonl"
"""One JSON line per request (``records.RequestRecord``); ``--records-file`` names its path."""
ARRIVALS_JSON = "arrivals.json"
"""Open loop: the schedule's parameters, start and due times (``arrivals.py``)."""
STAGES_JSON = "stages.json"
"""Ramp stages and when each actually began (``stages.py``)."""
CLIENT_JSON = "client.json"
"""The load generators' self-check: loop lag and CPU per process (``selfcheck.py``)."""
WORKERS_JSON = "workers.json"
"""The master's ledger in distributed runs (``distributed.py``)."""
LLM_HISTORY_CSV = "llm_history.csv"
"""``--ui``: the LLM chart page's points, one a second (``webui.py`` saves it at quit)."""
