"""Trace replay: trace files, their window and scaling, and the prompts that reproduce them."""
