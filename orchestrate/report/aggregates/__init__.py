"""Every aggregate of the report stage lives in this package: percentiles, rates and counts over many
records or samples. The rest of ``report/`` formats and compares what these compute.

Stage: report. One kind a module:

- ``recordsfile``: ``requests.jsonl`` read columnar (pyarrow), the frame every aggregate reads.
- ``chunkcolumn``: every record's chunk offsets in one shared buffer, handed out in blocks.
- ``blockstats``: exact order statistics of values too many to sort at once, read in blocks.
"""
