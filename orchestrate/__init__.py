"""tokenswarm's orchestrator: scenario → server → load (Locust) → records → report.

May import ``locustfiles`` (dataset, record schema); the reverse never happens.
"""
