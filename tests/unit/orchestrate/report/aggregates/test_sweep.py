"""orchestrate/report/aggregates/sweep.py: step-by-step speedups and where they cross 1.0, on fixed step figures
(the ``sweep`` block itself, from the steps' summaries: ``load/test_steps.py``)."""

from __future__ import annotations

import pytest

from orchestrate.report.aggregates.sweep import knee, speedups
from orchestrate.report.jsontypes import from_json
from orchestrate.report.schema.sweep import Sweep, SweepStep


def block(decode: list[float | None], key: str = "users", values: list[int] | None = None) -> dict:
    values = values or [1, 4, 16, 32][:len(decode)]
    return {"key": key, "values": values, "warmup_prompts": 8, "settle_s": 2.0,
            "steps": [{"value": v, "label": f"{key}-{v}", "status": "completed", "completed": 10, "sent": 10,
                       "errors": 0, "decode_tok_s": d, "prefill_tok_s": 100.0, "ttft_p50_ms": 10.0 * v,
                       "ttft_p99_ms": 20.0 * v, "tpot_p50_ms": 5.0} for v, d in zip(values, decode)]}


def sweep(decode: list[float | None], key: str = "users", values: list[int] | None = None) -> Sweep:
    """``block`` as the typed ``Sweep`` that ``speedups`` takes."""
    return from_json(Sweep, block(decode, key, values))


def test_the_crossover_is_the_first_step_below_one_after_leading():
    result = speedups(sweep([100, 200, 400, 500]), sweep([150, 220, 390, 450]))
    assert result is not None
    assert [round(s["speedup"], 3) for s in result["steps"]] == [1.5, 1.1, 0.975, 0.9]
    assert result["crossover"] == 16 and result["below_from"] == 16


def test_no_crossover_when_always_ahead_or_never_ahead():
    ahead = speedups(sweep([100, 200]), sweep([120, 200]))
    assert ahead is not None and ahead["crossover"] is None and ahead["below_from"] is None
    behind = speedups(sweep([100, 200]), sweep([90, 210]))
    assert behind is not None and behind["crossover"] is None and behind["below_from"] == 1  # never led: not a crossover


def test_sweeps_over_different_values_are_not_compared_step_by_step():
    assert speedups(sweep([1, 2]), sweep([1, 2], values=[1, 8])) is None
    assert speedups(sweep([1, 2]), sweep([1, 2], key="max_tokens")) is None


def test_a_step_without_figures_is_skipped_not_fatal():
    result = speedups(sweep([100, None, 300]), sweep([150, 200, 250]))
    assert result is not None and result["steps"][1]["speedup"] is None and result["crossover"] == 16


def _steps(points: list[tuple[int, float, float]]) -> list[SweepStep]:
    return [SweepStep(value=v, label=f"users-{v}", status="completed", decode_tok_s=d, ttft_p50_ms=t)
            for v, d, t in points]


def test_the_knee_is_where_throughput_stops_growing() -> None:
    found = knee(_steps([(1, 100.0, 50.0), (2, 200.0, 50.0), (4, 400.0, 52.0), (8, 410.0, 120.0), (16, 405.0, 300.0)]))
    assert found is not None and found.value == 4 and found.figure == "decode_tok_s"
    assert found.throughput == 400.0 and found.share_of_best == pytest.approx(400 / 410)
    assert found.ttft_p50_after == pytest.approx(120 / 52)


def test_no_knee_while_throughput_grows_in_proportion_or_with_too_few_steps() -> None:
    assert knee(_steps([(1, 100.0, 50.0), (2, 200.0, 50.0), (4, 400.0, 50.0), (8, 800.0, 50.0)])) is None
    assert knee(_steps([(1, 100.0, 50.0), (2, 200.0, 50.0)])) is None
    failed = _steps([(1, 100.0, 50.0), (2, 200.0, 50.0), (4, 400.0, 52.0), (8, 410.0, 120.0)])
    failed[2] = SweepStep(value=4, label="users-4", status="crashed")
    assert knee(failed) is not None and knee(failed).value == 2  # type: ignore[union-attr]
