"""orchestrate/run_options.py: the flags of ``tokenswarm run`` parsed into a scenario, load generators and
web UI, with every conflict one line. (The CLI's own messages around them are ``test_cli.py``'s.)"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

import orchestrate.runloop
from orchestrate.cli import main
from orchestrate.errors import ScenarioError
from orchestrate.load.locust_run import DEFAULT_MASTER_PORT, REMOTE_WORKERS_WAIT_S, Swarm, WebUi
from orchestrate.results import VariantPaths
from orchestrate.run_options import (
    add_run_arguments,
    duration,
    positive,
    refuse_unapplied,
    scenario_of,
    search_range,
    slo_limits,
    swarm_of,
    web_ui_of,
    with_search,
)
from orchestrate.scenario.host_limits import HostLimits
from orchestrate.scenario.slo import Slo
from orchestrate.scenario.spec import Scenario, Search
from orchestrate.server.preflight import API_KEY_ENV
from tests.helpers import parse_text


def args_of(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_run_arguments(parser)
    return parser.parse_args(list(argv))


@pytest.mark.parametrize("text, seconds", [("90", 90), ("30s", 30), ("5m", 300), ("1h30m", 5400), ("1m30s", 90),
                                           ("1.5m", 90), (" 2h ", 7200), ("0.5", 0.5), ("1h0m1s", 3601)])
def test_durations_in_locusts_forms(text: str, seconds: float) -> None:
    assert duration(text) == seconds


@pytest.mark.parametrize("text", ["", "x", "5 m", "1m1h", "-5", "0", "0s", "1d", "m"])
def test_anything_else_is_not_a_duration(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        duration(text)


def test_positive_numbers() -> None:
    assert positive(int)("3") == 3 and positive(float)("0.25") == 0.25
    with pytest.raises(argparse.ArgumentTypeError, match="must be an integer, got '2.5'"):
        positive(int)("2.5")
    with pytest.raises(argparse.ArgumentTypeError, match="must be a number, got 'x'"):
        positive(float)("x")
    with pytest.raises(argparse.ArgumentTypeError, match="must be > 0, got 0"):
        positive(float)("0")


def test_one_local_process_by_default() -> None:
    assert swarm_of(args_of()) == Swarm()
    assert swarm_of(args_of("--workers", "3")).workers == 3


def test_a_master_waits_for_remote_workers_on_all_interfaces(capsys: pytest.CaptureFixture[str],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKENSWARM_JOIN_TOKEN", "t")  # no token file is made
    swarm = swarm_of(args_of("--master", "--expect-workers", "2"))
    assert (swarm.remote_workers, swarm.master_bind_host, swarm.master_bind_port) == (2, "0.0.0.0", 0)
    assert swarm.workers_wait_s == REMOTE_WORKERS_WAIT_S and swarm.join_token_file is None
    assert f"binds 0.0.0.0:{DEFAULT_MASTER_PORT}, so other machines can reach it" in capsys.readouterr().err
    local = swarm_of(args_of("--master", "--expect-workers", "1", "--master-bind-host", "127.0.0.1",
                             "--master-bind-port", "6000", "--expect-workers-max-wait", "2m"))
    assert (local.master_bind_host, local.master_bind_port, local.workers_wait_s) == ("127.0.0.1", 6000, 120)
    assert capsys.readouterr().err == "", "a master bound to this host only is not warned about"


@pytest.mark.parametrize("argv, message", [
    (["--workers", "2", "--master", "--expect-workers", "2"], "--workers and --master exclude each other"),
    (["--master"], "--master needs --expect-workers N"),
    (["--expect-workers", "2"], "--master needs --expect-workers N"),
    (["--expect-workers-max-wait", "5m"], "only apply with --master"),
    (["--master-bind-host", "0.0.0.0"], "only apply with --master"),
    (["--join-token-file", "t"], "--join-token-file only applies with --master or --workers"),
])
def test_conflicting_swarm_flags(argv: list[str], message: str) -> None:
    with pytest.raises(ScenarioError, match=message):
        swarm_of(args_of(*argv))


def test_the_web_ui_is_local_on_a_free_port_unless_told(capsys: pytest.CaptureFixture[str]) -> None:
    assert web_ui_of(args_of()) is None
    ui = web_ui_of(args_of("--ui"))
    assert ui is not None and ui.host == "127.0.0.1" and ui.port > 0 and not ui.quit_on_stop
    assert web_ui_of(args_of("--ui", "--web-port", "8099", "--ui-quit-on-stop")) == WebUi("127.0.0.1", 8099, True)
    assert capsys.readouterr().err == ""
    with pytest.raises(ScenarioError, match="only apply with --ui"):
        web_ui_of(args_of("--ui-quit-on-stop"))


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return path


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


def test_the_api_key_file_reaches_the_environment_not_the_scenario(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(API_KEY_ENV, raising=False)
    key = tmp_path / "key"
    key.write_text("s3cret\n")
    scenario = scenario_of(args_of(str(write(tmp_path, "name: s\n")), "--api-key-file", str(key)))
    assert os.environ[API_KEY_ENV] == "s3cret" and "s3cret" not in repr(scenario.as_run())
    with pytest.raises(ScenarioError, match=r"--api-key-file: cannot read .*missing \(No such file or directory\)"):
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


# --- tokenswarm capacity: --slo, --range and the search they put on every variant -----------------

def search_args(slo: dict[str, float] | None = None, over: str | None = None,
                range: tuple[float, float] | None = None, precision: float | None = None,
                attainment: float | None = None) -> argparse.Namespace:
    """The capacity flags as parsed; None: the flag was not given."""
    return argparse.Namespace(slo=slo, over=over, range=range, precision=precision, attainment=attainment)


def test_slo_limits_are_key_ms_pairs() -> None:
    assert slo_limits("ttft_ms=2000,tpot_ms=100") == {"ttft_ms": 2000.0, "tpot_ms": 100.0}
    assert slo_limits(" e2e_ms=1500.5 ") == {"e2e_ms": 1500.5}


@pytest.mark.parametrize("text, message", [
    ("ttfb_ms=2000", "must be KEY=MS pairs with KEY one of ttft_ms, tpot_ms, e2e_ms, got 'ttfb_ms=2000'"),
    ("ttft_ms", "must be KEY=MS pairs"),
    ("", "must be KEY=MS pairs"),
    ("ttft_ms=2000,", "must be KEY=MS pairs"),
    ("ttft_ms=fast", "must be a number, got 'fast'"),
    ("tpot_ms=0", "must be > 0, got 0"),
    ("ttft_ms=2000,tpot_ms=-5", "must be > 0, got -5"),
])
def test_bad_slo_limits_are_argument_errors(text: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as info:
        slo_limits(text)
    assert str(info.value).startswith(message)


@pytest.mark.parametrize("text", ["ttft_ms=nan", "ttft_ms=inf"])
def test_a_limit_that_is_not_finite_is_refused_as_in_a_scenario(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError):
        slo_limits(text)


def test_a_search_range_is_two_numbers() -> None:
    assert search_range("1,256") == (1.0, 256.0)
    assert search_range("0.5, 32") == (0.5, 32.0)
    for bad in ("1", "1,2,3", "one,2", ""):
        with pytest.raises(argparse.ArgumentTypeError, match="must be LOW,HIGH"):
            search_range(bad)


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


def test_capacity_without_a_url_or_a_scenario_is_one_line_and_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["capacity", "--slo", "ttft_ms=2000"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tokenswarm: error: give a scenario file") and err.count("\n") == 1


def test_capacity_refuses_a_bad_slo_flag_before_anything_runs(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["capacity", "--url", "http://127.0.0.1:9", "--slo", "ttft=1"])
    assert info.value.code == 2
    assert capsys.readouterr().err == ("tokenswarm: error: argument --slo: must be KEY=MS pairs with KEY one of "
                                       "ttft_ms, tpot_ms, e2e_ms, got 'ttft=1' (see tokenswarm capacity --help)\n")


def test_capacity_runs_every_variant_with_the_search_of_its_flags(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    scenarios: list[Scenario] = []

    def run_scenario(scenario: Scenario, results_root: Path, swarm: object, resume: Path | None = None) -> Path:
        """Starts nothing: one completed summary per variant."""
        scenarios.append(scenario)
        for v in scenario.variants:
            paths = VariantPaths.create(results_root / "run", v.name)
            paths.server_json.write_text("{}")
            paths.summary_json.write_text('{"status": "completed"}')
        return results_root / "run"

    monkeypatch.setattr(orchestrate.runloop, "run_scenario", run_scenario)
    assert main(["capacity", "--url", "http://127.0.0.1:9", "--slo", "ttft_ms=2000,tpot_ms=100", "--range", "2,64",
                 "--results-dir", str(tmp_path)]) == 0
    (scenario,) = scenarios
    (v,) = scenario.variants
    assert v.search == Search("users", 2, 64) and v.slo == Slo(ttft_ms=2000.0, tpot_ms=100.0)
    assert v.server.url == "http://127.0.0.1:9"
