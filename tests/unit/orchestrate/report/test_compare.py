"""orchestrate/report/compare.py: hand-built summary.json files of a 2×2 study (flash-attn on/off × drafter none/mtp)."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from orchestrate.cli import main
from orchestrate.errors import ResultsError
from orchestrate.report.compare import VariantResult, basis, compare, on_basis, read_variants
from orchestrate.report.compare_report import write_comparison
from orchestrate.results import VariantPaths, compare_json, compare_md, compare_png
from orchestrate.scenario.settings import variant_settings

DRAFT = "/models/gemma-4-E4B-MTP.gguf"


def settings(fa: str, draft: str | None) -> dict[str, Any]:
    return {"server.launcher": "docker", "server.model": "/models/gemma-4-E4B.gguf", "server.draft_model": draft,
            "server.flags.flash-attn": fa, "server.flags.parallel": 32, "load.users": 32, "load.max_tokens": 256}


def summary(fa: str, draft: str | None, decode: float, prefill: float, ttft: float, tpot: float,
            acceptance: float | None = None, status: str = "completed", **extra: Any) -> dict[str, Any]:
    """A summary.json as the run loop writes it; p99s are twice the p50s."""
    out: dict[str, Any] = {
        "status": status, "settings": settings(fa, draft), "retried": False,
        "requests": {"sent": 100, "completed": 100, "errors": 0},
        "throughput": {"prefill_tok_s": prefill, "decode_tok_s": decode, "requests_per_s": 1.0},
        "latency_ms": {"ttft": {"p50": ttft, "p99": 2 * ttft}, "tpot": {"p50": tpot, "p99": 2 * tpot}},
        "speculative": {"acceptance_rate": acceptance} if acceptance is not None else None,
        "memory": {"peak_bytes": 8 * 2 ** 30, "source": "nvidia-smi"}}
    out.update(extra)
    return out


# decode 400 → 500 with the drafter (fa on), 320 → 288 (fa off); fa off: ×0.8 without drafter, ×0.576 with
STUDY = {
    "flash-attn-on_draft_model-none": summary("on", None, 400.0, 1000.0, 100.0, 20.0),
    "flash-attn-on_draft_model-mtp": summary("on", DRAFT, 500.0, 1100.0, 110.0, 16.0, acceptance=0.75),
    "flash-attn-off_draft_model-none": summary("off", None, 320.0, 800.0, 125.0, 25.0),
    "flash-attn-off_draft_model-mtp": summary("off", DRAFT, 288.0, 880.0, 137.5, 27.5, acceptance=0.7),
}
FAILED = {"status": "failed_to_load", "settings": settings("on", DRAFT), "retried": False,
          "requests": {"sent": 0, "completed": 0, "errors": 0}, "throughput": {}, "latency_ms": {},
          "server": {"cause": "ggml-cuda/fattn.cu:110: fatal error", "exit_code": 134}}


def write_run(run: Path, variants: dict[str, dict[str, Any] | None]) -> Path:
    """One variant folder per entry, in order (the order is server.json's mtime); None: no summary.json."""
    for i, (name, data) in enumerate(variants.items()):
        paths = VariantPaths.create(run, name)
        paths.server_json.write_text("{}")
        os.utime(paths.server_json, (1_000_000 + i, 1_000_000 + i))
        if data is not None:
            paths.summary_json.write_text(json.dumps(data))
    return run


def by_pair(effects: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {tuple(e["pair"]): e for e in effects}


def effects_of(data: dict[str, Any], factor: str) -> list[dict[str, Any]]:
    """The clean effects of one setting or factor."""
    return [e for e in data["effects"] if e["factor"] == factor and not e["confounded_by"]]


def factors_with_effects(data: dict[str, Any]) -> set[str]:
    return {e["factor"] for e in data["effects"] if not e["confounded_by"]}


def unfair(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Pairs one setting apart that give no effect (host load, prompt sets, repeats)."""
    return [e for e in data["effects"] if e["confounded_by"]]


def test_effects_come_only_from_pairs_that_differ_in_one_setting(tmp_path: Path):
    data = compare(read_variants([write_run(tmp_path / "run", STUDY)]))
    assert data["varying_settings"] == ["server.draft_model", "server.flags.flash-attn"]
    assert factors_with_effects(data) == {"server.draft_model", "server.flags.flash-attn"}
    drafter = by_pair(effects_of(data, "server.draft_model"))
    assert set(drafter) == {("flash-attn-on_draft_model-none", "flash-attn-on_draft_model-mtp"),
                            ("flash-attn-off_draft_model-none", "flash-attn-off_draft_model-mtp")}
    on = drafter[("flash-attn-on_draft_model-none", "flash-attn-on_draft_model-mtp")]
    assert (on["from"], on["to"], on["with"]) == (None, DRAFT, {"server.flags.flash-attn": "on"})
    assert on["ratios"] == pytest.approx({"decode_tok_s": 1.25, "ttft_p50_ms": 1.1, "tpot_p50_ms": 0.8})
    off = drafter[("flash-attn-off_draft_model-none", "flash-attn-off_draft_model-mtp")]
    assert off["with"] == {"server.flags.flash-attn": "off"}
    assert off["ratios"] == pytest.approx({"decode_tok_s": 0.9, "ttft_p50_ms": 1.1, "tpot_p50_ms": 1.1})
    fa = by_pair(effects_of(data, "server.flags.flash-attn"))
    none = fa[("flash-attn-on_draft_model-none", "flash-attn-off_draft_model-none")]
    assert (none["from"], none["to"], none["with"]) == ("on", "off", {"server.draft_model": None})
    assert none["ratios"] == pytest.approx({"decode_tok_s": 0.8, "ttft_p50_ms": 1.25, "tpot_p50_ms": 1.25})
    mtp = fa[("flash-attn-on_draft_model-mtp", "flash-attn-off_draft_model-mtp")]
    assert mtp["ratios"] == pytest.approx({"decode_tok_s": 0.576, "ttft_p50_ms": 1.25, "tpot_p50_ms": 1.71875})


def test_the_diagonal_pairs_are_confounded_with_both_settings_named(tmp_path: Path):
    data = compare(read_variants([write_run(tmp_path / "run", STUDY)]))
    assert [(c["a"], c["b"], c["differs"]) for c in data["confounded"]] == [
        ("flash-attn-on_draft_model-none", "flash-attn-off_draft_model-mtp",
         {"server.draft_model": [None, DRAFT], "server.flags.flash-attn": ["on", "off"]}),
        ("flash-attn-on_draft_model-mtp", "flash-attn-off_draft_model-none",
         {"server.draft_model": [DRAFT, None], "server.flags.flash-attn": ["on", "off"]}),
    ]
    assert data["confounded"][0]["decode_tok_s"] == [400.0, 288.0]
    assert data["repeats"] == [] and data["excluded"] == []


def test_deltas_against_the_first_completed_variant_or_the_chosen_one(tmp_path: Path):
    variants = read_variants([write_run(tmp_path / "run", STUDY)])
    data = compare(variants)
    assert data["baseline"] == "flash-attn-on_draft_model-none"
    deltas = {r["label"]: r["delta_pct"] for r in data["variants"]}
    assert deltas["flash-attn-on_draft_model-none"]["decode_tok_s"] == 0.0
    assert deltas["flash-attn-on_draft_model-mtp"] == pytest.approx({
        "prefill_tok_s": 10.0, "decode_tok_s": 25.0, "ttft_p50_ms": 10.0, "ttft_p99_ms": 10.0,
        "tpot_p50_ms": -20.0, "tpot_p99_ms": -20.0})
    assert deltas["flash-attn-off_draft_model-mtp"]["decode_tok_s"] == pytest.approx(-28.0)
    chosen = compare(variants, baseline="flash-attn-off_draft_model-none")
    assert chosen["baseline"] == "flash-attn-off_draft_model-none"
    assert {r["label"]: r["delta_pct"] for r in chosen["variants"]}["flash-attn-on_draft_model-none"][
        "decode_tok_s"] == pytest.approx(25.0)


def test_a_variant_that_failed_to_load_is_excluded_with_its_cause(tmp_path: Path):
    run = write_run(tmp_path / "run", {**STUDY, "flash-attn-on_draft_model-mtp": FAILED})
    data = compare(read_variants([run]))
    assert data["excluded"] == [{"label": "flash-attn-on_draft_model-mtp", "status": "failed_to_load",
                                 "cause": "ggml-cuda/fattn.cu:110: fatal error"}]
    # what is left: the drafter only with fa off, flash-attn only without drafter, one confounded pair
    assert [(e["a"], e["b"]) for e in effects_of(data, "server.draft_model")] == [
        ("flash-attn-off_draft_model-none", "flash-attn-off_draft_model-mtp")]
    assert [(e["a"], e["b"]) for e in effects_of(data, "server.flags.flash-attn")] == [
        ("flash-attn-on_draft_model-none", "flash-attn-off_draft_model-none")]
    assert [(c["a"], c["b"]) for c in data["confounded"]] == [
        ("flash-attn-on_draft_model-none", "flash-attn-off_draft_model-mtp")]
    failed = next(r for r in data["variants"] if r["status"] == "failed_to_load")
    assert failed["delta_pct"] is None
    md = write_comparison([run]).read_text()
    assert "- flash-attn-on_draft_model-mtp: failed_to_load: ggml-cuda/fattn.cu:110: fatal error" in md
    with pytest.raises(ResultsError, match="did not complete"):
        compare(read_variants([run]), baseline="flash-attn-on_draft_model-mtp")


def test_a_retried_variant_is_compared_with_the_settings_it_ran_with(tmp_path: Path):
    retried = summary("off", DRAFT, 290.0, 880.0, 137.5, 27.5, acceptance=0.7, retried=True,
                      first_attempt={"status": "failed_to_load", "cause": "ggml-cuda/fattn.cu:110: fatal error",
                                     "settings": settings("on", DRAFT)})
    run = write_run(tmp_path / "run", {**STUDY, "flash-attn-on_draft_model-mtp": retried})
    data = compare(read_variants([run]))
    # after the retry it equals fa-off + mtp: a repeat, not an effect of flash attention
    assert [(r["a"], r["b"]) for r in data["repeats"]] == [
        ("flash-attn-on_draft_model-mtp", "flash-attn-off_draft_model-mtp")]
    row = next(r for r in data["variants"] if r["retried"])
    assert row["retry_changed"] == {"server.flags.flash-attn": ["on", "off"]}
    md = write_comparison([run]).read_text()
    assert ("- flash-attn-on_draft_model-mtp: first try failed (ggml-cuda/fattn.cu:110: fatal error); "
            "retried with server.flags.flash-attn=off") in md
    assert "| flash-attn-on_draft_model-mtp | completed (retried) |" in md


def test_unknown_baseline_lists_the_variants(tmp_path: Path):
    run = write_run(tmp_path / "run", {"a": STUDY["flash-attn-on_draft_model-none"]})
    with pytest.raises(ResultsError) as info:
        write_comparison([run], baseline="nope")
    assert str(info.value) == "--baseline nope: no such variant; available: a"


def test_compare_across_two_runs_writes_into_the_first(tmp_path: Path):
    first = write_run(tmp_path / "20260101T000000Z-demo", {"base": summary("on", None, 400.0, 1000.0, 100.0, 20.0)})
    second = write_run(tmp_path / "20260102T000000Z-demo", {"base": summary("on", None, 440.0, 1000.0, 100.0, 20.0),
                                                            "drafter": summary("on", DRAFT, 500.0, 1000.0, 100.0,
                                                                               25.0)})
    md_path = write_comparison([first, second])
    assert md_path == compare_md(first)
    assert not compare_md(second).exists()
    data = json.loads(compare_json(first).read_text())
    assert data["runs"] == [str(first), str(second)]
    labels = [r["label"] for r in data["variants"]]
    assert labels == ["20260101T000000Z-demo/base", "20260102T000000Z-demo/base", "drafter"]
    assert [(r["a"], r["b"]) for r in data["repeats"]] == [tuple(labels[:2])]
    assert data["repeats"][0]["ratios"]["decode_tok_s"] == pytest.approx(1.1)
    # the drafter's effect, measured against both bases (each differs from it in the drafter alone)
    assert [(e["a"], e["b"]) for e in effects_of(data, "server.draft_model")] == [
        (labels[0], "drafter"), (labels[1], "drafter")]
    md = md_path.read_text()
    assert md.startswith(f"# Comparison\n\n2 runs (written into the first): `{first}`, `{second}`\n")
    assert compare(read_variants([first, second]), baseline="drafter")["baseline"] == "drafter"


def test_missing_summary_and_missing_settings(tmp_path: Path):
    run = tmp_path / "run"
    no_settings = summary("on", None, 400.0, 1000.0, 100.0, 20.0)
    del no_settings["settings"]
    write_run(run, {"old": no_settings, "broken": None})
    data = compare(read_variants([run]))
    assert data["excluded"] == [{"label": "old", "status": "completed", "cause": None},
                                {"label": "broken", "status": "missing", "cause": "no readable summary.json"}]
    assert data["baseline"] == "old"  # its numbers are still shown and can be the baseline


def test_a_summary_of_the_wrong_shape_is_one_line_naming_its_file_and_key(tmp_path: Path, capsys):
    bad = summary("off", None, 320.0, 800.0, 125.0, 25.0)
    bad["requests"] = {**bad["requests"], "completed": "all of them"}
    run = write_run(tmp_path / "run", {"good": STUDY["flash-attn-on_draft_model-none"], "bad": bad})
    with pytest.raises(ResultsError) as info:
        read_variants([run])
    assert str(info.value).startswith(f"{run / 'bad' / 'summary.json'}: requests.completed: ")
    assert main(["compare", str(run)]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith(f"tokenswarm: error: {run / 'bad' / 'summary.json'}: requests.completed: ")
    assert not compare_json(run).exists()


def test_settings_fall_back_to_the_runs_scenario_yaml(tmp_path: Path):
    from orchestrate.scenario.parse import parse_scenario
    scenario = parse_scenario("matrix:\n  flash-attn: [on, off]\n", Path("s.yaml"))
    run = tmp_path / "run"
    run.mkdir()
    (run / "scenario.yaml").write_text(yaml.safe_dump(scenario.as_run(), sort_keys=False))
    old = [summary("on", None, 400.0, 1000.0, 100.0, 20.0), summary("off", None, 320.0, 800.0, 125.0, 25.0)]
    for s in old:
        del s["settings"]
    write_run(run, dict(zip(["flash-attn-on", "flash-attn-off"], old)))
    data = compare(read_variants([run]))
    assert [r["settings"] for r in data["variants"]] == [variant_settings(v) for v in scenario.variants]
    assert factors_with_effects(data) == {"server.flags.flash-attn"}


def test_markdown_layout(tmp_path: Path):
    run = write_run(tmp_path / "run", {**STUDY, "flash-attn-on_draft_model-mtp": FAILED})
    md = write_comparison([run]).read_text()
    lines = md.splitlines()
    assert lines[:3] == ["# Comparison", "", f"Run: `{run}`"]
    assert ("| variant | status | done / errors | prefill tok/s | decode tok/s | TTFT p50 | TTFT p99 | TPOT p50 "
            "| TPOT p99 | acceptance | peak memory |") in lines
    assert ("| flash-attn-off_draft_model-mtp | completed | 100 / 0 | 880.0 | 288.0 | 138 ms | 275 ms | 28 ms "
            "| 55 ms | 70.0 % | 8.0 GiB (nvidia-smi) |") in lines
    assert ("| flash-attn-on_draft_model-mtp | failed_to_load | 0 / 0 | – | – | – | – | – | – | – | – |"
            in lines)
    assert "## Deltas against flash-attn-on_draft_model-none" in lines
    assert "| flash-attn-off_draft_model-none | -20.0 % | -20.0 % | +25.0 % | +25.0 % | +25.0 % | +25.0 % |" in lines
    assert ("- **server.draft_model** none → /models/gemma-4-E4B-MTP.gguf: decode ×0.90, TTFT p50 ×1.10, "
            "TPOT p50 ×1.10, with server.flags.flash-attn=off "
            "(flash-attn-off_draft_model-none vs flash-attn-off_draft_model-mtp)") in lines
    assert ("- flash-attn-on_draft_model-none vs flash-attn-off_draft_model-mtp: decode 400.0 → 288.0 tok/s changed "
            "server.draft_model and server.flags.flash-attn: confounded") in lines
    assert "| variant | server.draft_model | server.flags.flash-attn |" in lines
    assert lines[-1] == "![comparison](compare.png)"
    assert compare_png(run).stat().st_size > 0


def test_no_run_dirs_and_a_missing_run(tmp_path: Path):
    with pytest.raises(ResultsError, match="at least one run directory"):
        write_comparison([])
    with pytest.raises(ResultsError) as info:
        write_comparison([tmp_path / "nope"])
    assert str(info.value) == f"{tmp_path / 'nope'}: no such run directory"


def test_peak_memory_below_a_gib_is_shown_in_mib(tmp_path: Path):
    small = summary("on", None, 400.0, 1000.0, 100.0, 20.0, memory={"peak_bytes": 145 * 2 ** 20,
                                                                    "source": "process_tree"})
    no_memory = summary("off", None, 320.0, 800.0, 125.0, 25.0)
    del no_memory["memory"]
    md = write_comparison([write_run(tmp_path / "run", {"a": small, "b": no_memory})]).read_text()
    assert "| 145 MiB (process_tree) |" in md
    assert "| b | completed | 100 / 0 | 800.0 | 320.0 | 125 ms | 250 ms | 25 ms | 50 ms | – | – |" in md


def test_goodput_lines_and_ratio_only_under_one_slo(tmp_path: Path):
    slo = {"ttft_ms": 2000.0, "tpot_ms": 100.0}

    def good(n: int, rps: float, tok_s: float, limits: dict[str, float] = slo) -> dict[str, Any]:
        return {"slo": limits, "requests_meeting": n, "share": n / 100, "requests_per_s": rps,
                "output_tokens_per_s": tok_s, "missed_by": {}}

    run = write_run(tmp_path / "run", {
        "on": summary("on", None, 400.0, 1000.0, 100.0, 20.0, goodput=good(80, 2.0, 300.0)),
        "off": summary("off", None, 320.0, 800.0, 125.0, 25.0, goodput=good(60, 1.5, 240.0)),
        "other-slo": summary("on", DRAFT, 500.0, 1100.0, 110.0, 16.0, goodput=good(90, 3.0, 400.0, {"e2e_ms": 1.0})),
        "no-slo": summary("off", DRAFT, 288.0, 880.0, 137.5, 27.5)})
    data = compare(read_variants([run]))
    fa, fa_draft = effects_of(data, "server.flags.flash-attn")
    assert (fa["a"], fa["b"], fa_draft["a"], fa_draft["b"]) == ("on", "off", "other-slo", "no-slo")
    assert fa["ratios"]["goodput_rps"] == pytest.approx(0.75)  # 1.5 / 2.0 req/s, same SLO
    assert "goodput_rps" not in fa_draft["ratios"]  # one of them judged no goodput
    (draft_on,) = [e for e in effects_of(data, "server.draft_model") if e["with"]["server.flags.flash-attn"] == "on"]
    assert "goodput_rps" not in draft_on["ratios"]  # other SLO: not comparable
    lines = write_comparison([run]).read_text().splitlines()
    assert "## Goodput (requests within the SLO; ratios only between variants under the same SLO)" in lines
    assert "- on: 80 met TTFT ≤ 2.0 s, TPOT ≤ 100 ms (80.0 % of sent), 2.00 req/s, 300.0 output tok/s" in lines
    assert "- other-slo: 90 met E2E ≤ 1.00 ms (90.0 % of sent), 3.00 req/s, 400.0 output tok/s" in lines
    assert not any(line.startswith("- no-slo:") for line in lines)
    assert any(line.startswith("- **server.flags.flash-attn** on → off:") and "goodput ×0.75" in line
               for line in lines)


# --- factors: the drafter as one setting (draft model, spec-type, n-max) ----------------------------

DRAFTER_COVERS = ["server.draft_model", "server.flags.spec-type", "server.flags.spec-draft-n-max"]


def drafter_summary(fa: str, value: str, *numbers: float, factors: bool = True, **extra: Any) -> dict[str, Any]:
    """A summary of the factor study: ``mtp`` sets the draft model, spec-type and n-max; ``none`` none of them."""
    mtp = value == "mtp"
    out = summary(fa, DRAFT if mtp else None, *numbers, **extra)
    out["settings"].update({"server.flags.spec-type": "draft-mtp", "server.flags.spec-draft-n-max": 4} if mtp else {})
    if factors:
        out["factors"] = {"drafter": {"value": value, "covers": DRAFTER_COVERS}}
    return out


def factor_study(factors: bool = True) -> dict[str, dict[str, Any]]:
    """The 2×2 of STUDY's numbers, named and recorded as the matrix with a ``drafter`` factor writes them."""
    return {f"flash-attn-{fa}_drafter-{value}": drafter_summary(fa, value, *numbers, factors=factors)
            for (fa, value), numbers in zip([("on", "none"), ("on", "mtp"), ("off", "none"), ("off", "mtp")],
                                            [(400.0, 1000.0, 100.0, 20.0), (500.0, 1100.0, 110.0, 16.0),
                                             (320.0, 800.0, 125.0, 25.0), (288.0, 880.0, 137.5, 27.5)])}


def test_a_factor_is_one_setting_and_its_pairs_are_clean_effects_named_after_it(tmp_path: Path):
    data = compare(read_variants([write_run(tmp_path / "run", factor_study())]))
    assert data["factors"] == {"drafter": {"covers": DRAFTER_COVERS, "values": ["none", "mtp"]}}
    assert data["varying_settings"] == ["factor.drafter", "server.flags.flash-attn"]
    drafter = by_pair(effects_of(data, "factor.drafter"))
    on = drafter[("flash-attn-on_drafter-none", "flash-attn-on_drafter-mtp")]
    assert (on["from"], on["to"], on["with"]) == ("none", "mtp", {"server.flags.flash-attn": "on"})
    assert on["ratios"] == pytest.approx({"decode_tok_s": 1.25, "ttft_p50_ms": 1.1, "tpot_p50_ms": 0.8})
    assert drafter[("flash-attn-off_drafter-none", "flash-attn-off_drafter-mtp")]["ratios"]["decode_tok_s"] == \
        pytest.approx(0.9)
    fa = by_pair(effects_of(data, "server.flags.flash-attn"))
    assert fa[("flash-attn-on_drafter-mtp", "flash-attn-off_drafter-mtp")]["with"] == {"factor.drafter": "mtp"}
    # the factor and another setting changed together: confounded, both named
    assert [(c["a"], c["b"], c["differs"]) for c in data["confounded"]] == [
        ("flash-attn-on_drafter-none", "flash-attn-off_drafter-mtp",
         {"factor.drafter": ["none", "mtp"], "server.flags.flash-attn": ["on", "off"]}),
        ("flash-attn-on_drafter-mtp", "flash-attn-off_drafter-none",
         {"factor.drafter": ["mtp", "none"], "server.flags.flash-attn": ["on", "off"]})]
    row = next(r for r in data["variants"] if r["label"] == "flash-attn-on_drafter-mtp")
    assert row["settings"]["server.flags.spec-type"] == "draft-mtp"  # the raw settings stay in compare.json
    assert row["compared_settings"]["factor.drafter"] == "mtp" and "server.draft_model" not in row["compared_settings"]


def test_compare_md_names_the_factor_and_its_values(tmp_path: Path):
    lines = write_comparison([write_run(tmp_path / "run", factor_study())]).read_text().splitlines()
    assert ("- **drafter**: none, mtp; sets server.draft_model, server.flags.spec-type, "
            "server.flags.spec-draft-n-max") in lines
    assert ("- **drafter** none → mtp: decode ×1.25, TTFT p50 ×1.10, TPOT p50 ×0.80, "
            "with server.flags.flash-attn=on (flash-attn-on_drafter-none vs flash-attn-on_drafter-mtp)") in lines
    assert ("- **server.flags.flash-attn** on → off: decode ×0.80, TTFT p50 ×1.25, TPOT p50 ×1.25, "
            "with drafter=none (flash-attn-on_drafter-none vs flash-attn-off_drafter-none)") in lines
    assert ("- flash-attn-on_drafter-none vs flash-attn-off_drafter-mtp: decode 400.0 → 288.0 tok/s changed "
            "drafter and server.flags.flash-attn: confounded") in lines
    assert "| variant | drafter | server.flags.flash-attn |" in lines
    assert "| flash-attn-off_drafter-mtp | mtp | off |" in lines


def test_summaries_without_factors_compare_setting_by_setting_as_before(tmp_path: Path):
    data = compare(read_variants([write_run(tmp_path / "run", factor_study(factors=False))]))
    assert data["factors"] == {}
    # the drafter's three settings move together, so no pair isolates one of them: only flash-attn has effects
    assert factors_with_effects(data) == {"server.flags.flash-attn"}
    pair = next(c for c in data["confounded"] if (c["a"], c["b"]) == ("flash-attn-on_drafter-none",
                                                                    "flash-attn-on_drafter-mtp"))
    assert pair["differs"] == {"server.draft_model": [None, DRAFT], "server.flags.spec-draft-n-max": ["(not set)", 4],
                               "server.flags.spec-type": ["(not set)", "draft-mtp"]}
    md = write_comparison([write_run(tmp_path / "run", factor_study(factors=False))]).read_text()
    assert "## Factors" not in md


def test_a_retry_that_changed_a_factors_setting_keeps_it_from_folding(tmp_path: Path):
    # the fa-on + mtp variant was retried without its draft model: "mtp" no longer means one set of settings
    retried = drafter_summary("on", "mtp", 400.0, 1000.0, 100.0, 20.0, retried=True)
    retried["settings"]["server.draft_model"] = None
    study = {**factor_study(), "flash-attn-on_drafter-mtp": retried}
    data = compare(read_variants([write_run(tmp_path / "run", study)]))
    assert data["factors"] == {}
    assert "factor.drafter" not in data["varying_settings"]
    assert "server.draft_model" in data["varying_settings"]


# --- conditions beside settings: the host's own load ----------------------------------------------

QUIET = {"foreign_cpu_pct": {"p50": 0.0, "max": 2.0}, "steal_pct": {"p50": 0.0, "max": 1.0}, "busy": False,
         "limits": {"foreign_cpu_pct": 10.0, "steal_pct": 5.0}}
BUSY = {**QUIET, "foreign_cpu_pct": {"p50": 73.0, "max": 96.0}, "busy": True}


def test_a_pair_one_setting_apart_on_a_busy_host_is_confounded_by_host_load(tmp_path: Path):
    study = {name: {**s, "host": BUSY if name == "flash-attn-off_draft_model-none" else QUIET}
             for name, s in STUDY.items()}
    data = compare(read_variants([write_run(tmp_path / "run", study)]))
    fa = by_pair(effects_of(data, "server.flags.flash-attn"))
    assert list(fa) == [("flash-attn-on_draft_model-mtp", "flash-attn-off_draft_model-mtp")]  # the clean one
    assert fa[("flash-attn-on_draft_model-mtp", "flash-attn-off_draft_model-mtp")]["confounded_by"] == []
    assert ("flash-attn-off_draft_model-none", "flash-attn-off_draft_model-mtp") not in by_pair(
        effects_of(data, "server.draft_model"))
    hogged = [c for c in unfair(data) + data["confounded"] if "flash-attn-off_draft_model-none" in c["pair"]]
    assert len(hogged) == 3  # every pair with the busy variant
    one_apart = by_pair(hogged)[("flash-attn-on_draft_model-none", "flash-attn-off_draft_model-none")]
    assert one_apart["confounded_by"] == ["host_load"] and one_apart["ratios"]["decode_tok_s"] == pytest.approx(0.8)
    assert one_apart["busy"] == [None, "other processes used 73 % of a core (p50, max 96 %)"]
    diagonal = by_pair(hogged)[("flash-attn-on_draft_model-mtp", "flash-attn-off_draft_model-none")]
    assert diagonal["confounded_by"] == ["server.draft_model", "server.flags.flash-attn", "host_load"]
    write_comparison([tmp_path / "run"])
    assert ("- flash-attn-on_draft_model-none vs flash-attn-off_draft_model-none: decode 400.0 → 320.0 tok/s "
            "changed server.flags.flash-attn: confounded by host load (during flash-attn-off_draft_model-none: "
            "other processes used 73 % of a core (p50, max 96 %))") in compare_md(tmp_path / "run").read_text()


def test_quiet_hosts_and_summaries_without_host_readings_leave_effects_clean(tmp_path: Path):
    study = dict(STUDY, **{"flash-attn-on_draft_model-none": {**STUDY["flash-attn-on_draft_model-none"],
                                                              "host": QUIET}})
    data = compare(read_variants([write_run(tmp_path / "run", study)]))
    effects = data["effects"]
    assert len(effects) == 4 and all(e["confounded_by"] == [] for e in effects)


def test_summaries_from_before_completed_prompts_have_no_prompt_set(tmp_path: Path):
    """Without the key no prompt set is claimed (no ``prompt_set`` confound, no common count); a summary that
    completed nothing has the empty set; a capacity search's probes number their prompts apart: none."""
    old = STUDY["flash-attn-on_draft_model-none"]
    nothing = {**old, "requests": {"sent": 4, "completed": 0, "errors": 4}}
    listed = {**old, "completed_prompts": [0, 2, 1]}
    searched = {**listed, "capacity": {"over": "users", "max_passing": 8, "slo": {"ttft_ms": 500}}}
    run = write_run(tmp_path / "run", {"old": old, "nothing": nothing, "listed": listed, "searched": searched})
    assert [v.prompts for v in read_variants([run])] == [None, frozenset(), frozenset({0, 1, 2}), None]


def test_a_variant_the_time_cap_cut_completed_other_prompts_and_is_confounded(tmp_path: Path):
    everything, early = list(range(100)), list(range(60))
    study = {name: {**s, "completed_prompts": early if name == "flash-attn-off_draft_model-none" else everything}
             for name, s in STUDY.items()}
    data = compare(read_variants([write_run(tmp_path / "run", study)]))
    mtp = by_pair(effects_of(data, "server.flags.flash-attn"))[("flash-attn-on_draft_model-mtp",
                                                               "flash-attn-off_draft_model-mtp")]
    assert mtp["n_common_prompts"] == 100 and mtp["confounded_by"] == []
    cut = by_pair(unfair(data))[("flash-attn-on_draft_model-none", "flash-attn-off_draft_model-none")]
    assert cut["confounded_by"] == ["prompt_set"] and cut["n_common_prompts"] == 60 and cut["n_prompts"] == [100, 60]
    write_comparison([tmp_path / "run"])
    md = compare_md(tmp_path / "run").read_text()
    assert "changed server.flags.flash-attn: confounded by different prompts (60 in common of 100 and 60 completed)" in md
    assert ", over the same 100 prompts (flash-attn-on_draft_model-mtp vs flash-attn-off_draft_model-mtp)" in md


# --- repeats: the median ratio, its range, noise and disagreement ----------------------------------

def write_repeats(run: Path, decode: dict[str, list[float]], ttft: dict[str, list[float]] | None = None,
                  hosts: dict[tuple[int, str], dict[str, Any]] | None = None) -> Path:
    """``run/repeat-<i>/<fa-on|fa-off>``, as ``repeats: K`` writes them: decode (and TTFT) per repeat."""
    k = len(next(iter(decode.values())))
    for i in range(k):
        variants = {}
        for name, values in decode.items():
            fa = name.removeprefix("fa-")
            extra = {"repeat": {"index": i + 1, "of": k, "order": 2 * i + (fa == "off") + 1}}
            if hosts and (i + 1, name) in hosts:
                extra["host"] = hosts[(i + 1, name)]
            variants[name] = summary(fa, None, values[i], 1000.0, (ttft or {}).get(name, [100.0] * k)[i], 20.0,
                                     **extra)
        write_run(run / f"repeat-{i + 1}", variants)
    return run


def test_repeats_give_the_median_ratio_with_its_range_and_say_what_is_within_noise(tmp_path: Path):
    run = write_repeats(tmp_path / "run", {"fa-on": [400.0, 410.0, 390.0], "fa-off": [320.0, 336.2, 304.2]},
                        ttft={"fa-on": [100.0, 100.0, 100.0], "fa-off": [98.0, 103.0, 101.0]})
    data = compare(read_variants([run]))
    assert [r["label"] for r in data["variants"]] == [f"repeat-{i}/fa-{fa}" for i in (1, 2, 3) for fa in ("on", "off")]
    (effect,) = data["effects"]
    assert (effect["factor"], effect["from"], effect["to"], effect["pair"]) == (
        "server.flags.flash-attn", "on", "off", ["fa-on", "fa-off"])
    assert effect["n_repeats"] == 3 and effect["error_bar"] is True and effect["confounded_by"] == []
    assert [r["repeat"] for r in effect["repeats"]] == [1, 2, 3]  # paired by repeat, adjacent in time
    assert effect["ratios"]["decode_tok_s"] == pytest.approx(0.8)
    assert effect["range"]["decode_tok_s"] == pytest.approx([0.78, 0.82])
    assert effect["within_noise"]["decode_tok_s"] is False
    assert effect["ratios"]["ttft_p50_ms"] == pytest.approx(1.01) and effect["within_noise"]["ttft_p50_ms"] is True
    assert data["n_repeats"] == 3 and data["noise_floor"]["source"] == "repeats"
    assert data["noise_floor"]["floor"]["decode_tok_s"] == pytest.approx(410 / 390 - 1)  # fa-on's repeats
    lines = write_comparison([run]).read_text().splitlines()
    assert ("- **server.flags.flash-attn** on → off: decode ×0.80 (0.78–0.82), TTFT p50 ×1.01 (0.98–1.03, "
            "within noise), TPOT p50 ×1.00 (within noise) (fa-on vs fa-off)") in lines
    assert any(line.startswith("Each ratio is the median over 3 repeats") for line in lines)


def test_repeats_that_point_both_ways_beyond_the_noise_floor_disagree(tmp_path: Path):
    run = write_repeats(tmp_path / "run", {"fa-on": [400.0, 402.0, 401.0], "fa-off": [280.0, 520.0, 400.0]})
    data = compare(read_variants([run]))
    (effect,) = data["effects"]
    assert effect["confounded_by"] == ["repeats_disagree"]
    md = write_comparison([run]).read_text()
    assert "confounded by repeats that disagree (decode ×0.70 to ×1.29 over 3 repeats" in md
    assert "- none: no two completed variants differ in exactly one setting" in md


def test_a_repeat_on_a_busy_host_is_left_out_of_the_effect(tmp_path: Path):
    busy = {(2, "fa-off"): {**BUSY}}
    run = write_repeats(tmp_path / "run", {"fa-on": [400.0, 400.0, 400.0], "fa-off": [320.0, 200.0, 328.0]},
                        hosts=busy)
    (effect,) = compare(read_variants([run]))["effects"]
    assert effect["confounded_by"] == [] and effect["n_repeats"] == 2
    assert effect["left_out"] == [{"repeat": 2, "confounded_by": ["host_load"]}]
    assert effect["range"]["decode_tok_s"] == pytest.approx([0.8, 0.82])
    assert "; left out: repeat 2 (host_load) (fa-on vs fa-off)" in write_comparison([run]).read_text()


def intervals(decode: float, half: float, ttft: float, ttft_half: float) -> dict[str, Any]:
    """A summary's ``intervals``: decode ± ``half``, TTFT p50 ± ``ttft_half``."""
    return {"intervals": {"batches": 10, "decode_tok_s": {"low": decode - half, "high": decode + half},
                          "ttft_ms": {"p50": {"low": ttft - ttft_half, "high": ttft + ttft_half}}}}


def test_one_run_each_is_judged_by_its_own_intervals(tmp_path: Path):
    """decode 400 ± 8 (2 %) vs 396 ± 7.92 (2 %): ×0.99 ± 2.83 %, within noise; TTFT 100 ± 1 vs 130 ± 1.3: ×1.3 ± 1.4 %,
    not; TPOT has no interval, so no verdict from one run."""
    run = write_run(tmp_path / "run", {
        "fa-on": summary("on", None, 400.0, 1000.0, 100.0, 20.0, **intervals(400.0, 8.0, 100.0, 1.0)),
        "fa-off": summary("off", None, 396.0, 1000.0, 130.0, 20.0, **intervals(396.0, 7.92, 130.0, 1.3))})
    (effect,) = compare(read_variants([run]))["effects"]
    assert effect["within_noise"] == {"decode_tok_s": True, "ttft_p50_ms": False, "tpot_p50_ms": False}
    half = math.hypot(0.02, 0.02)
    assert effect["interval"]["decode_tok_s"] == pytest.approx([0.99 * (1 - half), 0.99 * (1 + half)])
    assert "tpot_p50_ms" not in effect["interval"]
    md = write_comparison([run]).read_text()
    assert "decode ×0.99 (95 % [0.96–1.02], within noise), TTFT p50 ×1.30 (95 % [1.28–1.32])" in md


def test_one_run_each_has_no_error_bar_unless_a_measured_floor_says_it_is_noise(tmp_path: Path):
    run = write_run(tmp_path / "run", {"fa-on": summary("on", None, 400.0, 1000.0, 100.0, 20.0),
                                       "fa-off": summary("off", None, 396.0, 1000.0, 130.0, 20.0)})
    (effect,) = compare(read_variants([run]))["effects"]
    assert effect["error_bar"] is False and effect["within_noise"]["decode_tok_s"] is False
    assert "Each variant ran once: a ratio's 95 % interval comes from the two runs' own" in \
        write_comparison([run]).read_text()
    floor = {"floor": {"decode_tok_s": 0.03, "ttft_p50_ms": 0.05}, "measured_at": "2026-12-01T00:00:00Z",
             "variant": "base"}
    (run / "noise_floor.json").write_text(json.dumps(floor))
    data = compare(read_variants([run]))
    assert data["noise_floor"]["source"] == "measured"
    (effect,) = data["effects"]
    assert effect["within_noise"] == {"decode_tok_s": True, "ttft_p50_ms": False, "tpot_p50_ms": False}
    md = write_comparison([run]).read_text()
    assert ("Noise floor: decode ±3.0 %, TTFT p50 ±5.0 % (the largest deviation between identical runs: measured "
            "on this host by `tokenswarm noise-floor` at 2026-12-01T00:00:00Z on base).") in md
    assert "decode ×0.99 (within noise), TTFT p50 ×1.30" in md


def test_the_floor_is_the_larger_of_the_measured_one_and_this_runs_quiet_repeats(tmp_path: Path):
    """Two adjacent runs agree more closely than repeats minutes apart: the real study's 0.6 % against 4 %."""
    busy = {(3, "fa-on"): {**BUSY}}
    run = write_repeats(tmp_path / "run", {"fa-on": [400.0, 416.0, 300.0], "fa-off": [320.0, 336.2, 304.2]},
                        hosts=busy)
    (run / "noise_floor.json").write_text(json.dumps({"floor": {"decode_tok_s": 0.006, "tpot_p50_ms": 0.5}}))
    data = compare(read_variants([run]))
    floor = data["noise_floor"]
    assert floor["source"] == "measured+repeats"
    assert floor["floor"]["decode_tok_s"] == pytest.approx(0.04)  # fa-on's quiet repeats 1 and 2, not the busy 3rd
    assert floor["floor"]["tpot_p50_ms"] == 0.5  # the measured one, larger
    assert "and the spread of this run's steadiest repeats, whichever is larger" in write_comparison([run]).read_text()


# --- the basis effects are read on, and capacity -------------------------------------------------

def steady(decode: float, ttft: float, tpot: float) -> dict[str, Any]:
    """A summary's ``steady_state`` block with a window found."""
    return {"found": True, "prefill_tok_s": 10 * decode, "decode_tok_s": decode,
            "ttft_ms": {"p50": ttft, "p99": 2 * ttft}, "tpot_ms": {"p50": tpot, "p99": 2 * tpot}}


def test_basis_is_the_steady_state_only_when_every_variant_has_a_window() -> None:
    def result(numbers: dict[str, Any]) -> VariantResult:
        return VariantResult("v", Path("run"), "v", "completed", numbers=numbers)

    windowed, whole = result({"steady_decode_tok_s": 1.0}), result({"decode_tok_s": 1.0})
    assert basis([windowed, windowed]) == "steady_state"
    assert basis([windowed, whole]) == "whole_run"
    assert basis([]) == "whole_run"
    numbers = {"decode_tok_s": 100.0, "ttft_p50_ms": 50.0, "steady_decode_tok_s": 120.0, "steady_ttft_p50_ms": 40.0}
    assert on_basis(numbers, "whole_run") is numbers
    assert on_basis(numbers, "steady_state") == {**numbers, "decode_tok_s": 120.0, "ttft_p50_ms": 40.0}
    assert numbers["decode_tok_s"] == 100.0, "the whole run's figures are not changed in place"


def test_effects_are_read_from_the_steady_state_windows_when_every_variant_has_one(tmp_path: Path) -> None:
    """The ramp and drain differ between variants; the windows are the comparable part."""
    run = write_run(tmp_path / "run", {
        "on": summary("on", None, 400.0, 1000.0, 100.0, 20.0, steady_state=steady(500.0, 80.0, 16.0)),
        "off": summary("off", None, 320.0, 800.0, 125.0, 25.0, steady_state=steady(250.0, 100.0, 24.0)),
        "broken": FAILED})  # no window, but not compared either
    data = compare(read_variants([run]))
    assert data["basis"] == "steady_state"
    (fa,) = effects_of(data, "server.flags.flash-attn")
    assert fa["ratios"] == pytest.approx({"decode_tok_s": 0.5, "ttft_p50_ms": 1.25, "tpot_p50_ms": 1.5})
    assert fa["decode_tok_s"] == [500.0, 250.0]
    rows = {r["label"]: r for r in data["variants"]}
    assert rows["on"]["decode_tok_s"] == 400.0, "the table keeps the whole run's figures"
    assert rows["on"]["steady_decode_tok_s"] == 500.0
    assert "Read from each variant's steady-state window (the ramp and the drain left out)." in \
        write_comparison([run]).read_text().splitlines()
    assert json.loads(compare_json(run).read_text())["basis"] == "steady_state"


def test_one_variant_without_a_window_puts_every_effect_on_the_whole_run(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", {
        "on": summary("on", None, 400.0, 1000.0, 100.0, 20.0, steady_state=steady(500.0, 80.0, 16.0)),
        "off": summary("off", None, 320.0, 800.0, 125.0, 25.0,
                       steady_state={"found": False, "reason": "too few requests"})})
    data = compare(read_variants([run]))
    assert data["basis"] == "whole_run"
    (fa,) = effects_of(data, "server.flags.flash-attn")
    assert fa["ratios"] == pytest.approx({"decode_tok_s": 0.8, "ttft_p50_ms": 1.25, "tpot_p50_ms": 1.25})
    assert ("Read from the whole runs: not every variant has a steady-state window (its summary says why)."
            in write_comparison([run]).read_text().splitlines())


def capacity(max_passing: float | None, slo: dict[str, float] | None = None, attainment: float = 0.99,
             over: str = "users") -> dict[str, Any]:
    """A summary's ``capacity`` block, as ``aggregates.capacity`` writes it (the parts compare reads)."""
    unit = "users" if over == "users" else "req/s"
    return {"over": over, "unit": unit, "slo": slo or {"ttft_ms": 2000.0}, "attainment": attainment,
            "max_passing": max_passing, "min_failing": None if max_passing is None else max_passing + 1,
            "sentence": f"serves {max_passing:g} {unit} within TTFT ≤ 2.0 s" if max_passing else "no probe ran"}


@pytest.mark.parametrize("other, ratio", [
    (capacity(36), 1.5),
    (capacity(36, slo={"ttft_ms": 1000.0}), None),
    (capacity(36, attainment=0.9), None),
    (capacity(36, over="rate"), None),
    (None, None),
])
def test_a_capacity_ratio_only_under_the_same_slo_attainment_and_load_axis(
        tmp_path: Path, other: dict[str, Any] | None, ratio: float | None) -> None:
    off_extra: dict[str, Any] = {"capacity": other} if other else {}
    run = write_run(tmp_path / "run", {"on": summary("on", None, 400.0, 1000.0, 100.0, 20.0, capacity=capacity(24)),
                                       "off": summary("off", None, 320.0, 800.0, 125.0, 25.0, **off_extra)})
    (fa,) = effects_of(compare(read_variants([run])), "server.flags.flash-attn")
    assert fa["ratios"].get("capacity") == (None if ratio is None else pytest.approx(ratio))
    assert ("capacity" in fa["ratios"]) == (ratio is not None)


def test_compare_md_has_a_capacity_section_and_the_ratio_in_the_effect(tmp_path: Path) -> None:
    run = write_run(tmp_path / "run", {
        "on": summary("on", None, 400.0, 1000.0, 100.0, 20.0, capacity=capacity(24)),
        "off": summary("off", None, 320.0, 800.0, 125.0, 25.0, capacity=capacity(36)),
        "plain": summary("on", DRAFT, 500.0, 1100.0, 110.0, 16.0)})
    lines = write_comparison([run]).read_text().splitlines()
    at = lines.index("## Capacity (ratios only between variants searched under the same SLO and attainment)")
    assert lines[at + 1:at + 4] == ["", "- on: serves 24 users within TTFT ≤ 2.0 s",
                                    "- off: serves 36 users within TTFT ≤ 2.0 s"]
    assert not any(line.startswith("- plain:") for line in lines)
    assert any(line.startswith("- **server.flags.flash-attn** on → off:") and "capacity ×1.50" in line
               for line in lines)


def test_no_capacity_section_without_a_search(tmp_path: Path) -> None:
    md = write_comparison([write_run(tmp_path / "run", {**STUDY})]).read_text()
    assert "## Capacity" not in md and "capacity ×" not in md


def test_two_searches_compare_by_their_capacity_alone_whatever_prompts_their_probes_completed(
        tmp_path: Path) -> None:
    """A search's merged records mix its probes (each numbers its prompts from 0): its decode or TTFT over
    them is no load level's, and its prompt set no condition; the effect is the capacity ratio, clean."""
    run = write_run(tmp_path / "run", {
        "on": summary("on", None, 400.0, 1000.0, 100.0, 20.0, capacity=capacity(24), completed_prompts=[0, 1, 2]),
        "off": summary("off", None, 320.0, 800.0, 125.0, 25.0, capacity=capacity(18), completed_prompts=[0, 5])})
    data = compare(read_variants([run]))
    (fa,) = effects_of(data, "server.flags.flash-attn")
    assert data["basis"] == "capacity"
    assert fa["ratios"] == {"capacity": pytest.approx(0.75)} and fa["confounded_by"] == []
    assert "Read from each variant's capacity search" in write_comparison([run]).read_text()
