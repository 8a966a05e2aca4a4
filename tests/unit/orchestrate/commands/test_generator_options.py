"""orchestrate/commands/generator_options.py: the load generators, the web UI and the API key from the flags,
with every conflict one line."""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path

import pytest

from locustfiles.admission import JOIN_TOKEN_ENV
from orchestrate.cli import main
from orchestrate.commands.generator_options import api_key_of, swarm_of, web_ui_of
from orchestrate.errors import ScenarioError
from orchestrate.load.locust_run import DEFAULT_MASTER_PORT, REMOTE_WORKERS_WAIT_S, Swarm, WebUi
from orchestrate.server.preflight import API_KEY_ENV
from tests.unit.orchestrate.commands.helpers import DEMO, args_of, one_error_line


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


def test_the_api_key_file_is_read_not_exported(tmp_path: Path, no_api_key: None) -> None:
    """The key, stripped; the environment is the command's main's to set (``test_run.py``)."""
    key = tmp_path / "key"
    key.write_text("s3cret\n")
    assert api_key_of(args_of("--api-key-file", str(key))) == "s3cret" and API_KEY_ENV not in os.environ
    assert api_key_of(args_of()) is None
    with pytest.raises(ScenarioError, match=r"--api-key-file: cannot read .*missing \(No such file or directory\)"):
        api_key_of(args_of("--api-key-file", str(tmp_path / "missing")))


# --- through tokenswarm run ------------------------------------------------------------------------

@pytest.mark.parametrize("flags, swarm", [
    ([], Swarm()),
    (["--workers", "2"], Swarm(workers=2)),
    (["--master", "--expect-workers", "3"], Swarm(remote_workers=3, master_bind_host="0.0.0.0")),
    (["--master", "--expect-workers", "1", "--master-bind-host", "127.0.0.1", "--master-bind-port", "6000"],
     Swarm(remote_workers=1, master_bind_host="127.0.0.1", master_bind_port=6000)),
])
def test_run_swarm_flags(tmp_path: Path, no_run, monkeypatch, flags, swarm):
    monkeypatch.setenv("TOKENSWARM_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv(JOIN_TOKEN_ENV, raising=False)
    assert main(["run", str(DEMO), "--results-dir", str(tmp_path), *flags]) == 0
    kept = tmp_path / "cache" / "secrets" / "join-token"  # --master without a token: one made and kept
    assert no_run.swarms == [replace(swarm, join_token_file=kept) if swarm.remote_workers else swarm]


def test_run_join_token_flags(tmp_path: Path, no_run, monkeypatch, capsys):
    monkeypatch.setenv("TOKENSWARM_CACHE", str(tmp_path / "cache"))
    master = ["run", str(DEMO), "--results-dir", str(tmp_path), "--master", "--expect-workers", "1"]
    monkeypatch.setenv(JOIN_TOKEN_ENV, "from-the-environment")
    assert main(master) == 0 and no_run.swarms[-1].join_token_file is None  # Locust inherits the variable
    given = tmp_path / "token"
    given.write_text("from-a-file\n")
    assert main([*master, "--join-token-file", str(given)]) == 0 and no_run.swarms[-1].join_token_file == given
    assert main(["run", str(DEMO), "--results-dir", str(tmp_path), "--workers", "2", "--join-token-file",
                 str(given)]) == 0 and no_run.swarms[-1].join_token_file == given
    assert "warning: the Locust master binds 0.0.0.0:5557, so other machines can reach it" in capsys.readouterr().err
    assert not (tmp_path / "cache").exists()


@pytest.mark.parametrize("flags, message", [
    (["--workers", "2", "--master", "--expect-workers", "2"], "--workers and --master exclude each other"),
    (["--master"], "--master needs --expect-workers N"),
    (["--expect-workers", "2"], "--master needs --expect-workers N"),
    (["--master-bind-port", "6000"], "only apply with --master"),
    (["--join-token-file", "t"], "--join-token-file only applies with --master or --workers"),
    (["--workers", "2", "--join-token-file", "/nonexistent/t"],
     "--join-token-file: cannot read /nonexistent/t (No such file or directory)"),
])
def test_run_swarm_conflicts_are_one_line(tmp_path: Path, capsys, no_run, flags, message):
    assert main(["run", str(DEMO), "--results-dir", str(tmp_path), *flags]) == 2
    assert message in one_error_line(capsys)


# --ui (the web UI instead of headless; locustfiles/webui.py)

def test_run_ui_flags(tmp_path: Path, no_run, capsys):
    assert main(["run", str(DEMO), "--results-dir", str(tmp_path), "--ui", "--web-port", "8099"]) == 0
    assert no_run.uis == [WebUi(host="127.0.0.1", port=8099)]
    assert main(["run", str(DEMO), "--results-dir", str(tmp_path), "--ui"]) == 0
    assert no_run.uis[-1] is not None and no_run.uis[-1].port > 0  # a free port, the same for every variant
    assert main(["run", str(DEMO), "--results-dir", str(tmp_path)]) == 0
    assert no_run.uis[-1] is None  # headless stays the default
    assert main(["run", str(DEMO), "--results-dir", str(tmp_path), "--ui", "--web-host", "0.0.0.0",
                 "--web-port", "8099"]) == 0
    assert no_run.uis[-1] == WebUi(host="0.0.0.0", port=8099)
    assert "warning: the web UI listens on 0.0.0.0" in capsys.readouterr().err


def test_web_flags_need_ui(tmp_path: Path, capsys, no_run):
    assert main(["run", str(DEMO), "--results-dir", str(tmp_path), "--web-port", "8099"]) == 2
    assert one_error_line(capsys) == "tokenswarm: error: --web-host/--web-port/--ui-quit-on-stop only apply with --ui"
