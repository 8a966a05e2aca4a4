"""orchestrate/report/aggregates/precision.py: a figure's relative half width, and the ``until`` block."""

from __future__ import annotations

import pytest

from orchestrate.report.aggregates.precision import relative_half_width, until_block
from orchestrate.report.schema.common import Percentiles
from orchestrate.report.schema.intervals import Interval, Intervals, PercentileIntervals
from orchestrate.report.schema.steady import Goodput, SteadyState

WINDOW = SteadyState(found=True, rule="r", decode_tok_s=100.0, ttft_ms=Percentiles(p50=50.0, p90=80.0, p99=200.0),
                     goodput=Goodput(share=0.9),
                     intervals=Intervals(decode_tok_s=Interval(98.0, 103.0), goodput_share=Interval(0.85, 0.93),
                                         ttft_ms=PercentileIntervals(p50=Interval(49.0, 51.0),
                                                                     p99=Interval(190.0, None))))


def test_the_wider_side_over_the_figure() -> None:
    assert relative_half_width(WINDOW, "decode_tok_s") == pytest.approx(0.03)
    assert relative_half_width(WINDOW, "ttft_ms.p50") == pytest.approx(0.02)
    assert relative_half_width(WINDOW, "slo_attainment") == pytest.approx(0.05 / 0.9)
    assert relative_half_width(WINDOW, "ttft_ms.p99") is None  # unbounded above: not precise at all
    assert relative_half_width(WINDOW, "tpot_ms.p50") is None
    assert relative_half_width(SteadyState(found=False, rule="r", reason="none"), "decode_tok_s") is None


def test_the_block_says_which_held_when_and_why_the_run_ended_short() -> None:
    watched = {"checks": 4, "held_at_s": {"decode_tok_s": 12.5}}
    block = until_block({"decode_tok_s": 0.05, "ttft_ms.p99": 0.05}, WINDOW, watched, False, "num_prompts")
    assert block is not None and not block.held and not block.stopped and block.checks == 4
    decode, p99 = block.targets
    assert (decode.held, decode.reached, decode.value, decode.held_at_s) == (True, pytest.approx(0.03), 100.0, 12.5)
    assert (p99.held, p99.reached, p99.held_at_s) == (False, None, None)
    assert block.reason == "the run ended (num_prompts) before every target held"
    stopped = until_block({"decode_tok_s": 0.05}, WINDOW, watched, True, "until")
    assert stopped is not None and stopped.held and stopped.reason is None
    assert until_block({}, WINDOW, None, False, None) is None
