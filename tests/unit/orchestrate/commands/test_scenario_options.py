"""orchestrate/commands/scenario_options.py: the scenario a command runs, the file (or the built-in one for
``--url``) with the flags' overrides, and capacity's search on every variant; every misfit one line."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from orchestrate.cli import main
from orchestrate.commands.scenario_options import refuse_unapplied, scenario_of, with_search
from orchestrate.errors import ScenarioError
from orchestrate.scenario.host_limits import HostLimits
from orchestrate.scenario.slo import Slo
from orchestrate.scenario.spec import Search
from orchestrate.server.preflight import API_KEY_ENV
from tests.helpers import ROOT, parse_text
from tests.unit.orchestrate.commands.helpers import DEMO, args_of, one_error_line, write


def test_a_url_without_a_scenario_runs_the_built_in_one(no_run, capsys, tmp_path: Path):
    assert main(["run", "--base-url", "http://127.0.0.1:9", "--dataset", "synthetic:200", "-u", "8",
                 "-t", "20s", "--results-dir", str(tmp_path)]) == 0
    (scenario,) = no_run.scenarios
    (variant,) = scenario.variants
    assert variant.server.launcher == "external" and variant.server.url == "http://127.0.0.1:9"
    assert (variant.load.dataset, variant.load.users, variant.load.max_seconds) == ("synthetic:200", 8, 20.0)
    assert main(["run", "-u", "8"]) == 2
    assert "give a scenario file" in one_error_line(capsys)


def test_a_url_matrix_of_server_settings_is_refused(no_run, capsys):
    matrix = ROOT / "scenarios" / "demo-matrix.yaml"
    assert main(["run", str(matrix), "--url", "http://127.0.0.1:9"]) == 2
    line = one_error_line(capsys)
    assert line.startswith("tokenswarm: error: --url: variants flash-attn-on_drafter-none and ") and \
        "cannot apply to a server it did not start" in line
    assert no_run.scenarios == []


def test_run_rejects_a_non_http_url(capsys, no_run):
    assert main(["run", str(DEMO), "--url", "ftp://x"]) == 2
    assert one_error_line(capsys) == "tokenswarm: error: --url: must start with http:// or https://, got 'ftp://x'"
    assert no_run.scenarios == []


def test_run_applies_overrides(tmp_path: Path, no_run):
    code = main(["run", str(DEMO), "--url", "http://127.0.0.1:8080", "--users", "4", "--num-prompts", "10",
                 "--results-dir", str(tmp_path)])
    assert code == 0
    (scenario,) = no_run.scenarios
    (variant,) = scenario.variants
    assert (variant.server.launcher, variant.server.url) == ("external", "http://127.0.0.1:8080")
    # --spawn-rate follows --users when not given; untouched settings come from the file
    assert (variant.load.users, variant.load.spawn_rate, variant.load.num_prompts) == (4, 4.0, 10)
    assert (variant.load.max_tokens, variant.load.dataset) == (64, "sharegpt-v3")


def test_run_passes_allow_truncated(tmp_path: Path, no_run):
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: s\nload: {dataset: 'synthetic:10'}\n")
    assert main(["run", str(scenario), "--results-dir", str(tmp_path)]) == 0
    assert main(["run", str(scenario), "--allow-truncated", "--dataset", "sharegpt-v3",
                 "--results-dir", str(tmp_path)]) == 0
    before, after = (s.variants[0].load for s in no_run.scenarios)
    assert (before.allow_truncated, after.allow_truncated, after.dataset) == (False, True, "sharegpt-v3")


def test_run_bad_scenario_is_one_line(tmp_path: Path, capsys, no_run):
    bad = tmp_path / "bad.yaml"
    bad.write_text("server:\n  launcher: kubernetes\n")
    assert main(["run", str(bad)]) == 2
    assert one_error_line(capsys) == (f"tokenswarm: error: {bad}:2 server.launcher: unknown launcher "
                                      "'kubernetes'; available: embedded, process, docker, external")
    assert no_run.scenarios == []


def test_flags_override_every_variant_and_leave_the_rest(tmp_path: Path) -> None:
    path = write(tmp_path, "name: s\nload: {users: 4, spawn_rate: 1, num_prompts: 9, max_tokens: 7}\n"
                           "variants: [{name: a}, {name: b, load: {users: 2}}]\n")
    scenario = scenario_of(args_of(str(path), "-u", "8", "--warmup-prompts", "3", "--server-lost-after", "10s",
                                   "--repeats", "3", "--steal-limit", "2.5"))
    assert [(v.load.users, v.load.spawn_rate, v.load.num_prompts, v.load.max_tokens) for v in scenario.variants] == \
        [(8, 8.0, 9, 7)] * 2, "--spawn-rate follows --users when not given"
    assert {(v.load.warmup_prompts, v.load.server_lost_after_s) for v in scenario.variants} == {(3, 10.0)}
    assert isinstance(scenario.variants[0].load.warmup_prompts, int)
    assert scenario.repeats == 3 and scenario.host_limits == HostLimits(steal_pct=2.5)
    untouched = scenario_of(args_of(str(path)))
    assert [v.load.users for v in untouched.variants] == [4, 2] and untouched.repeats == 1
    assert untouched.host_limits == HostLimits()


def test_the_api_key_file_stays_out_of_the_scenario_and_the_environment(tmp_path: Path, no_api_key: None) -> None:
    """``scenario_of`` only builds: the key is ``api_key_of``'s to read and the command's main's to hand over."""
    key = tmp_path / "key"
    key.write_text("s3cret\n")
    scenario = scenario_of(args_of(str(write(tmp_path, "name: s\n")), "--api-key-file", str(key)))
    assert "s3cret" not in repr(scenario.as_run()) and API_KEY_ENV not in os.environ
    scenario_of(args_of(str(write(tmp_path, "name: s\n")), "--api-key-file", str(tmp_path / "missing")))


def test_a_url_makes_every_variant_external(tmp_path: Path) -> None:
    scenario = scenario_of(args_of(str(write(tmp_path, "name: s\n")), "--url", "https://h:1"))
    assert {(v.server.launcher, v.server.url) for v in scenario.variants} == {("external", "https://h:1")}
    with pytest.raises(ScenarioError, match="^give a scenario file"):
        scenario_of(args_of())


def test_with_a_url_variants_must_differ_in_what_can_be_applied() -> None:
    """Two variants one server setting apart would be one server measured twice."""
    load_only = parse_text("""
        name: s
        variants: [{name: a, load: {users: 2}}, {name: b, load: {users: 4}}]
    """)
    refuse_unapplied(load_only)
    server_only = parse_text("""
        name: s
        variants: [{name: a, server: {flags: {parallel: 2}}}, {name: b, server: {flags: {parallel: 4}}}]
    """)
    with pytest.raises(ScenarioError) as info:
        refuse_unapplied(server_only)
    assert str(info.value).startswith("--url: variants a and b differ only in server settings (server.flags.parallel)")


# --- tokenswarm capacity: the search --slo, --range ... put on every variant -------------------------

def search_args(slo: dict[str, float] | None = None, over: str | None = None,
                range: tuple[float, float] | None = None, precision: float | None = None,
                attainment: float | None = None) -> argparse.Namespace:
    """The capacity flags as parsed; None: the flag was not given."""
    return argparse.Namespace(slo=slo, over=over, range=range, precision=precision, attainment=attainment)


TWO_VARIANTS = """
    name: s
    variants: [{name: a}, {name: b, load: {users: 4}}]
"""


def test_the_flags_put_the_slo_and_a_default_search_on_every_variant() -> None:
    scenario = with_search(parse_text(TWO_VARIANTS), search_args(slo={"ttft_ms": 2000.0}))
    assert [v.search for v in scenario.variants] == [Search("users", 1, 256)] * 2
    assert {v.slo for v in scenario.variants} == {Slo(ttft_ms=2000.0)}
    assert [v.load.users for v in scenario.variants] == [32, 4], "the rest of each variant is kept"


def test_a_scenarios_own_search_and_slo_are_kept_unless_a_flag_overrides_them() -> None:
    scenario = parse_text("""
        name: s
        slo: {tpot_ms: 100}
        search: {range: [2, 64], precision: 0.1, attainment: 0.9, max_probes: 12}
    """)
    (kept,) = with_search(scenario, search_args()).variants
    assert kept.search == Search("users", 2, 64, 0.1, 0.9, max_probes=12) and kept.slo == Slo(tpot_ms=100.0)
    (changed,) = with_search(scenario, search_args(slo={"ttft_ms": 500.0}, precision=0.02)).variants
    assert changed.search == Search("users", 2, 64, 0.02, 0.9, max_probes=12)
    assert changed.slo == Slo(ttft_ms=500.0), "--slo replaces the scenario's limits"
    (ranged,) = with_search(scenario, search_args(range=(4.0, 16.0), attainment=0.95)).variants
    assert ranged.search is not None and (ranged.search.low, ranged.search.high) == (4, 16)
    assert isinstance(ranged.search.low, int) and ranged.search.attainment == 0.95


def test_over_rate_from_the_flags_searches_requests_per_second() -> None:
    scenario = parse_text("""
        name: s
        load: {users: 64}
    """)
    (v,) = with_search(scenario, search_args(slo={"ttft_ms": 2000.0}, over="rate", range=(0.5, 8.0))).variants
    assert v.search is not None and (v.search.over, v.search.low, v.search.high) == ("rate", 0.5, 8.0)


@pytest.mark.parametrize("text, args, message", [
    (TWO_VARIANTS, search_args(), "--slo: a capacity search needs SLO limits to judge each probe by"),
    (TWO_VARIANTS, search_args(slo={"ttft_ms": 1.0}, range=(8.0, 8.0)),
     "--range: must be 0 < low < high, got [8, 8]"),
    (TWO_VARIANTS, search_args(slo={"ttft_ms": 1.0}, range=(16.0, 4.0)),
     "--range: must be 0 < low < high, got [16, 4]"),
    (TWO_VARIANTS, search_args(slo={"ttft_ms": 1.0}, precision=1.5), "--precision: must be a share between 0 and 1"),
    (TWO_VARIANTS, search_args(slo={"ttft_ms": 1.0}, attainment=2.0), "--attainment: must be a share above 0"),
    ("name: s\nload: {rate: 2}\n", search_args(slo={"ttft_ms": 1.0}), "--over: over users is a closed loop"),
    ("name: s\nvariants: [{name: a}, {name: b, load: {max_tokens: [8, 16]}}]\n", search_args(slo={"ttft_ms": 1.0}),
     "variant b: a capacity search chooses its own loads"),
])
def test_an_impossible_search_is_one_line_naming_the_flag(text: str, args: argparse.Namespace, message: str) -> None:
    with pytest.raises(ScenarioError) as info:
        with_search(parse_text(text), args)
    assert str(info.value).startswith(message) and "\n" not in str(info.value)
