"""Stage 1, scenario: YAML → frozen specs (``spec.py``), validated once (``parse.py``).

Imports nothing of the later stages: the server, the load and the report read these specs.
"""
