"""Stage 2, server: launch it (``launchers/``), wait until it is ready, read what it is (``preflight.py``),
watch it while the load runs (``liveness.py``) and say why it died (``diagnose.py``).

Imports the scenario's specs; nothing of the load or the report.
"""
