"""orchestrate/report/compare_report.py: ``compare.md`` rendered from given comparison data (the data itself
is ``compare.py``'s, tested from hand-built runs in ``test_compare.py``), and the files it writes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from orchestrate.report.aggregates.sweep import speedups
from orchestrate.report.compare_report import comparable, crossover_sentence, markdown, write_comparison
from orchestrate.results import VariantPaths, compare_json, compare_md, compare_png, compare_sweep_png
from tests.unit.orchestrate.report.aggregates.test_sweep import sweep


def row(label: str, decode: float | None = 100.0, **extra: Any) -> dict[str, Any]:
    return {"label": label, "status": "completed", "retried": False, "completed": 10, "errors": 0,
            "prefill_tok_s": 500.0, "decode_tok_s": decode, "ttft_p50_ms": 80.0, "ttft_p99_ms": 1500.0,
            "tpot_p50_ms": 9.5, "tpot_p99_ms": 20.0, "acceptance": None, "peak_memory_bytes": None,
            "delta_pct": None, "compared_settings": {}, "retry_changed": None, "first_attempt_cause": None, **extra}


def data(*rows: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"runs": ["results/r1"], "sweeps": [], "baseline": None, "variants": list(rows), "varying_settings": [],
            "factors": {}, "n_repeats": 1, "noise_floor": {}, "effects": [], "confounded": [], "repeats": [],
            "excluded": [], **extra}


def effect(factor: str = "server.flags.flash-attn", **extra: Any) -> dict[str, Any]:
    return {"factor": factor, "from": "on", "to": "off", "with": {}, "pair": ["a", "b"], "confounded_by": [],
            "ratios": {"decode_tok_s": 0.8, "ttft_p50_ms": 1.25, "tpot_p50_ms": None},
            "decode_tok_s": [100.0, 80.0], **extra}


def test_the_table_formats_each_column_by_its_kind() -> None:
    """Rates as numbers, latencies as durations, acceptance as a percentage, memory with its source."""
    md = markdown(data(row("a", acceptance=0.625, peak_memory_bytes=3 * 2 ** 30, memory_source="container"),
                       row("b", decode=None, completed=None, status="crashed", retried=True))).splitlines()
    assert md[:3] == ["# Comparison", "", "Run: `results/r1`"]
    assert "| a | completed | 10 / 0 | 500.0 | 100.0 | 80 ms | 1.5 s | 9.50 ms | 20 ms | 62.5 % | 3.0 GiB (container) |" in md
    assert "| b | crashed (retried) | – | 500.0 | – | 80 ms | 1.5 s | 9.50 ms | 20 ms | – | – |" in md
    assert markdown(data(row("a"), runs=["r1", "r2"])).splitlines()[2] == "2 runs (written into the first): `r1`, `r2`"


def test_deltas_leave_out_the_baseline_and_rows_without_numbers() -> None:
    deltas = {"prefill_tok_s": 5.0, "decode_tok_s": -12.34, "ttft_p50_ms": None, "ttft_p99_ms": 0.0,
              "tpot_p50_ms": 1.0, "tpot_p99_ms": 2.0}
    md = markdown(data(row("a", delta_pct={k: 0.0 for k in deltas}), row("b", delta_pct=deltas),
                       row("c"), baseline="a")).splitlines()
    start = md.index("## Deltas against a")
    table = [line for line in md[start:] if line.startswith("| ") and "variant" not in line]
    assert table == ["| b | +5.0 % | -12.3 % | – | +0.0 % | +1.0 % | +2.0 % |"]
    assert "## Deltas" not in "\n".join(markdown(data(row("a"))).splitlines())


def test_a_clean_effect_states_its_ratios_what_was_held_and_its_pair() -> None:
    held: dict[str, Any] = {"with": {"server.draft_model": None, "factor.drafter": "mtp"}, "n_common_prompts": 42}
    md = markdown(data(effects=[effect(**held)]))
    assert ("- **server.flags.flash-attn** on → off: decode ×0.80, TTFT p50 ×1.25, with server.draft_model=none, "
            "drafter=mtp, over the same 42 prompts (a vs b)") in md.splitlines()
    assert "Each variant ran once: a ratio's 95 % interval comes from the two runs' own" in md and "## Confounded" not in md


def test_repeats_give_ranges_and_say_within_noise() -> None:
    e = effect(range={"decode_tok_s": [0.78, 0.83], "ttft_p50_ms": [1.25, 1.25]},
               within_noise={"ttft_p50_ms": True}, left_out=[{"repeat": 2, "confounded_by": ["host_load"]}])
    md = markdown(data(effects=[e], n_repeats=3)).splitlines()
    assert ("- **server.flags.flash-attn** on → off: decode ×0.80 (0.78–0.83), TTFT p50 ×1.25 (within noise); "
            "left out: repeat 2 (host_load) (a vs b)") in md
    assert any(line.startswith("Each ratio is the median over 3 repeats") for line in md)


def test_no_clean_effect_is_said_so_and_a_factor_is_named_by_its_axis() -> None:
    e = effect("factor.drafter", confounded_by=["host_load"], busy=["steal 12 %", None])
    md = markdown(data(effects=[e])).splitlines()
    assert "- none: no two completed variants differ in exactly one setting under the same conditions" in md
    assert ("- a vs b: decode 100.0 → 80.0 tok/s changed drafter: confounded by host load (during a: steal 12 %)"
            in md)


def test_a_confounded_pair_names_every_reason() -> None:
    pair = {"pair": ["a", "b"], "decode_tok_s": [100.0, None], "differs": {"x": [1, 2], "y": [1, 2], "z": [1, 2]},
            "confounded_by": ["prompt_set", "repeats_disagree"], "n_prompts": [90, 80], "n_common_prompts": 70,
            "over_common_prompts": {"decode_tok_s": 0.9}, "range": {"decode_tok_s": [0.7, 1.3]}, "n_repeats": 3}
    line = next(x for x in markdown(data(confounded=[pair])).splitlines() if x.startswith("- a vs b"))
    assert line == ("- a vs b: decode 100.0 → – tok/s changed x, y and z: confounded by different prompts (70 in "
                    "common of 90 and 80 completed); over those 70: decode ×0.90 and repeats that disagree "
                    "(decode ×0.70 to ×1.30 over 3 repeats, both beyond the noise floor)")


def test_the_noise_floor_says_where_it_comes_from() -> None:
    measured = {"source": "measured", "floor": {"decode_tok_s": 0.031, "not_a_metric": 1.0},
                "measured": {"measured_at": "2026-01-01", "variant": "v"}}
    md = markdown(data(effects=[effect()], noise_floor=measured))
    assert ("Noise floor: decode ±3.1 % (the largest deviation between identical runs: measured on this host by "
            "`tokenswarm noise-floor` at 2026-01-01 on v).") in md.splitlines()
    both = markdown(data(effects=[effect()], noise_floor={**measured, "source": "measured+repeats"}))
    assert "and the spread of this run's steadiest repeats, whichever is larger" in both
    repeats = markdown(data(effects=[effect()], noise_floor={"source": "repeats", "floor": {"tpot_p50_ms": 0.05}}))
    assert "Noise floor from this run's repeats (the steadiest variant's spread): TPOT p50 ±5.0 %; no `tokenswarm " \
           "noise-floor` was measured on this host." in repeats
    assert "Noise floor" not in markdown(data(effects=[effect()], noise_floor={"floor": {"not_a_metric": 1.0}}))


def test_a_swept_pair_gets_its_step_table_and_crossover() -> None:
    sweep = {"key": "users", "crossover": 16, "below_from": None,
             "steps": [{"value": 4, "decode_tok_s": [100.0, 150.0], "speedup": 1.5, "ttft_p50_ratio": 1.1,
                        "tpot_p50_ratio": 0.66},
                       {"value": 16, "decode_tok_s": [300.0, None], "speedup": None, "ttft_p50_ratio": None,
                        "tpot_p50_ratio": None}]}
    md = markdown(data(effects=[effect("server.draft_model", sweep=sweep)])).splitlines()
    assert "### server.draft_model on → off, step by step (a vs b)" in md
    assert any(line.startswith("**b decodes faster than a until users = 16") for line in md)
    assert "| 4 | 100.0 | 150.0 | 1.50 | 1.10 | 0.66 |" in md and "| 16 | 300.0 | – | – | – | – |" in md


def test_the_crossover_sentence_names_where_the_lead_ends() -> None:
    result = speedups(sweep([100, 200, 400, 500]), sweep([150, 220, 390, 450]))
    assert result is not None
    assert "until users = 16" in crossover_sentence("users", result, "base", "drafter", "server.draft_model")


def test_the_crossover_sentence_without_a_crossover() -> None:
    ahead = speedups(sweep([100, 200]), sweep([120, 200]))
    assert ahead is not None and "no crossover" in crossover_sentence("users", ahead, "a", "b", "x")
    behind = speedups(sweep([100, 200]), sweep([90, 210]))
    assert behind is not None and "never decodes faster" in crossover_sentence("users", behind, "a", "b", "x")


def test_left_out_retried_factors_and_differing_settings_sections() -> None:
    rows = [row("a", compared_settings={"server.flags.parallel": 4, "factor.drafter": "mtp"}),
            row("b", retried=True, first_attempt_cause="fattn abort",
                retry_changed={"server.flags.flash-attn": ["on", "off"]}, compared_settings={"factor.drafter": None})]
    md = markdown(data(*rows, varying_settings=["server.flags.parallel", "factor.drafter"],
                       factors={"drafter": {"values": ["none", "mtp"], "covers": ["server.draft_model"]}},
                       excluded=[{"label": "c", "status": "failed_to_load", "cause": "out of memory"},
                                 {"label": "d", "status": "completed", "cause": None}],
                       repeats=[{"a": "a", "b": "a#2", "ratios": {"decode_tok_s": 1.02}}]),
                  plot_name="compare.png", sweep_plot="compare_sweep.png").splitlines()
    assert "- **drafter**: none, mtp; sets server.draft_model" in md
    assert "- c: failed_to_load: out of memory" in md and "- d: completed: no settings recorded" in md
    assert "- b: first try failed (fattn abort); retried with server.flags.flash-attn=off" in md
    assert "- a vs a#2: decode ×1.02" in md
    assert "| variant | server.flags.parallel | drafter |" in md
    assert "| a | 4 | mtp |" in md and "| b | (not set) | none |" in md
    assert md[-3:] == ["![comparison](compare.png)", "", "![sweeps](compare_sweep.png)"]


def summary(decode: float | None) -> dict[str, Any]:
    return {"status": "completed", "retried": False, "settings": {"server.flags.parallel": 4 if decode else 8},
            "requests": {"sent": 1, "completed": 1, "errors": 0},
            "throughput": {"decode_tok_s": decode, "prefill_tok_s": 1.0}, "latency_ms": {}}


def write_variant(run: Path, name: str, decode: float | None) -> None:
    paths = VariantPaths.create(run, name)
    paths.server_json.write_text("{}")
    paths.summary_json.write_text(json.dumps(summary(decode)))


def test_comparable_needs_two_results(tmp_path: Path) -> None:
    run = tmp_path / "run"
    write_variant(run, "a", 1.0)
    assert not comparable([run]) and not comparable([tmp_path / "missing"])
    other = tmp_path / "other"
    write_variant(other, "b", 2.0)
    assert comparable([run, other])
    write_variant(run, "c", 3.0)
    assert comparable([run])


def test_a_comparison_without_numbers_leaves_no_stale_chart(tmp_path: Path) -> None:
    """A chart of an earlier comparison in the same run folder is removed, not left beside new numbers."""
    run = tmp_path / "run"
    write_variant(run, "a", None)
    write_variant(run, "b", None)
    compare_png(run).write_bytes(b"old chart")
    compare_sweep_png(run).write_bytes(b"old chart")
    assert write_comparison([run]) == compare_md(run)
    assert not compare_png(run).exists() and not compare_sweep_png(run).exists()
    assert "![comparison]" not in compare_md(run).read_text()
    assert [v["label"] for v in json.loads(compare_json(run).read_text())["variants"]] == ["a", "b"]
