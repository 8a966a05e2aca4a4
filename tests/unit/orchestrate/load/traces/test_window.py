"""orchestrate/load/traces/window.py: the window, max_requests, input_scale (with the block size) and the caps,
each counted; the trace's ideal prefix reuse."""

from __future__ import annotations

from orchestrate.load.traces.files import SAMPLE, TraceFile, TraceRow, read_trace
from orchestrate.load.traces.window import fit_trace
from orchestrate.scenario.spec import TraceSpec


def trace(*rows: TraceRow) -> TraceFile:
    from pathlib import Path
    return TraceFile(Path("t.jsonl"), "mooncake", rows)


ROWS = (TraceRow(1, 0.0, 500, 1500, (0, 1, 2)), TraceRow(2, 1.0, 20, 1200, (0, 1, 3)),
        TraceRow(3, 2.5, 30, 600, (0, 4)), TraceRow(4, 4.0, 40, 1024, (5, 1)))


def test_the_window_starts_its_clock_at_its_first_request() -> None:
    requests, conditions = fit_trace(trace(*ROWS), TraceSpec("t", start_s=1.0, duration_s=2.0))
    assert [(r.line, r.at_s) for r in requests] == [(2, 0.0), (3, 1.5)]
    assert (conditions.requests, conditions.rows, conditions.span_s) == (2, 4, 1.5)


def test_input_scale_scales_the_block_too_and_the_caps_are_counted() -> None:
    spec = TraceSpec("t", input_scale=0.25, max_input_tokens=300, max_output_tokens=100, max_requests=3)
    requests, conditions = fit_trace(trace(*ROWS), spec)
    assert conditions.block_tokens == 128
    assert [(r.input_tokens, r.output_tokens, r.blocks) for r in requests] == [
        (300, 100, (0, 1, 2)), (300, 20, (0, 1, 3)), (150, 30, (0, 4))]
    assert (conditions.clipped_input, conditions.clipped_output) == (1, 1)  # 1,200 × 0.25 is 300: not cut


def test_ideal_reuse_counts_ids_seen_before_and_the_prefix_a_cache_can_serve() -> None:
    _, conditions = fit_trace(trace(*ROWS), TraceSpec("t"))
    assert (conditions.blocks, conditions.blocks_seen_before) == (10, 4)  # 0, 1 again; 0; 1 (not leading)
    # row 2 reuses blocks 0 and 1 (1,024 tokens), row 3 block 0 (512); row 4's block 1 follows 5: no prefix
    assert conditions.reusable_tokens == 1024 + 512
    assert conditions.input_tokens == 1500 + 1200 + 600 + 1024


def test_the_shipped_slice_scaled_for_a_small_server() -> None:
    requests, conditions = fit_trace(read_trace(SAMPLE), TraceSpec("s", input_scale=1 / 64, duration_s=40,
                                                                   max_output_tokens=32))
    assert conditions.block_tokens == 8 and conditions.requests == len(requests) == 119
    assert all(len(r.blocks) * 8 >= r.input_tokens > (len(r.blocks) - 1) * 8 for r in requests)
    assert conditions.blocks_seen_before >= conditions.requests - 1  # block 0 each time
