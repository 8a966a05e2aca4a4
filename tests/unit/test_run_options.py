"""orchestrate/run_options.py: the flags of ``tokenswarm run`` parsed into a scenario, load generators and
web UI, with every conflict one line. (The CLI's own messages around them are ``test_cli.py``'s.)"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import pytest

from orchestrate.errors import ScenarioError
from orchestrate.load.loadrun import DEFAULT_MASTER_PORT, REMOTE_WORKERS_WAIT_S, Swarm, WebUi
from orchestrate.run_options import add_run_arguments, duration, positive, refuse_unapplied, scenario_of, swarm_of, web_ui_of
from orchestrate.scenario.hostlimits import HostLimits
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
