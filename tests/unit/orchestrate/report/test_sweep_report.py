"""orchestrate/report/sweep_report.py: step-by-step speedups and where they cross 1.0, on fixed step figures."""

from __future__ import annotations

from pathlib import Path

from orchestrate.report.sweep_report import crossover_sentence, markdown, plot, speedups


def block(decode: list[float | None], key: str = "users", values: list[int] | None = None) -> dict:
    values = values or [1, 4, 16, 32][:len(decode)]
    return {"key": key, "values": values, "warmup_prompts": 8, "settle_s": 2.0,
            "steps": [{"value": v, "label": f"{key}-{v}", "status": "completed", "completed": 10, "sent": 10,
                       "errors": 0, "decode_tok_s": d, "prefill_tok_s": 100.0, "ttft_p50_ms": 10.0 * v,
                       "ttft_p99_ms": 20.0 * v, "tpot_p50_ms": 5.0} for v, d in zip(values, decode)]}


def test_the_crossover_is_the_first_step_below_one_after_leading():
    result = speedups(block([100, 200, 400, 500]), block([150, 220, 390, 450]))
    assert [round(s["speedup"], 3) for s in result["steps"]] == [1.5, 1.1, 0.975, 0.9]
    assert result["crossover"] == 16 and result["below_from"] == 16
    assert "until users = 16" in crossover_sentence("users", result, "base", "drafter", "server.draft_model")


def test_no_crossover_when_always_ahead_or_never_ahead():
    ahead = speedups(block([100, 200]), block([120, 200]))
    assert ahead["crossover"] is None and ahead["below_from"] is None
    assert "no crossover" in crossover_sentence("users", ahead, "a", "b", "x")
    behind = speedups(block([100, 200]), block([90, 210]))
    assert behind["crossover"] is None and behind["below_from"] == 1  # never led: not a crossover
    assert "never decodes faster" in crossover_sentence("users", behind, "a", "b", "x")


def test_sweeps_over_different_values_are_not_compared_step_by_step():
    assert speedups(block([1, 2]), block([1, 2], values=[1, 8])) is None
    assert speedups(block([1, 2]), block([1, 2], key="max_tokens")) is None


def test_a_step_without_figures_is_skipped_not_fatal():
    result = speedups(block([100, None, 300]), block([150, 200, 250]))
    assert result["steps"][1]["speedup"] is None and result["crossover"] == 16


def test_markdown_lists_every_step_and_not_run_ones(tmp_path: Path):
    b = block([100, 200])
    b["steps"].append({"value": 16, "label": "users-16", "status": "not_run"})
    b["values"].append(16)
    text = "\n".join(markdown(b))
    assert "| 1 | completed | 10 / 10 | 0 | 100.0 |" in text and "| 16 | not run |" in text
    assert plot([("base", b), ("drafter", block([150, 220]))], tmp_path / "s.png").stat().st_size > 10_000
