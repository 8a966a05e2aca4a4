"""orchestrate/server/launchers/embedded.py: the config's checks, the scenario → config mapping, and how
``start()`` reads the child's URL or its reason for dying.

No llama.cpp server starts: the launcher's child is swapped for a few lines of Python (``CHILD``) that
write a URL, a log line, or nothing, as the real ``embedded_child`` would.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from orchestrate.errors import ScenarioError, ServerExitedError, ServerNotReadyError
from orchestrate.scenario.spec import ServerSpec
from orchestrate.server.launchers import embedded_config
from orchestrate.server.launchers.embedded import EmbeddedConfig, EmbeddedLauncher
from tests.helpers import ROOT

CHILD = r"""
import os, signal, sys, time
fd = int(sys.argv[sys.argv.index("--ready-fd") + 1])
mode = sys.argv[1]
print("PYTHONPATH=" + os.environ.get("PYTHONPATH", ""), flush=True)
if mode == "url":
    os.write(fd, b"http://127.0.0.1:")
    time.sleep(0.1)
    os.write(fd, b"5555\n")
    time.sleep(30)
elif mode == "die":
    print("0.00.010.000 E llama_model_load: error loading model: invalid magic characters 'abcd'", flush=True)
    sys.exit(1)
elif mode == "sigill":  # llama.cpp's last line, then an instruction this host will not run
    print("init: llama threadpool init, n_threads = 2", flush=True)
    os.kill(os.getpid(), signal.SIGILL)
else:  # "hang": never loads
    time.sleep(30)
"""


def launcher(tmp_path: Path, mode: str, config: EmbeddedConfig | None = None,
             timeout_s: float = 10.0) -> EmbeddedLauncher:
    model = tmp_path / "m.gguf"
    model.write_bytes(b"abcd")
    launch = EmbeddedLauncher(config or EmbeddedConfig(model_path=str(model)), tmp_path / "server.log",
                              start_timeout_s=timeout_s)
    launch.argv = [sys.executable, "-c", CHILD, mode]
    return launch


# --- the config -----------------------------------------------------------------------------------

@pytest.mark.parametrize("bad", [{"flash_attn": "yes"}, {"parallel": 0}, {"threads": 0}, {"ctx_size": -1},
                                 {"draft_n_max": 0}])
def test_config_refuses_values_llama_cpp_would_not_take(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        EmbeddedConfig(model_path="/m.gguf", **bad)  # type: ignore[arg-type]


def test_the_child_gets_the_config_as_json(tmp_path: Path) -> None:
    """The argv carries every field (api keys as a JSON list) for ``embedded_child.build_params``."""
    config = EmbeddedConfig(model_path="/m.gguf", parallel=3, api_keys=("a", "b"), alias="tiny")
    launch = EmbeddedLauncher(config, tmp_path / "server.log")
    assert launch.argv[1:4] == ["-m", "orchestrate.server.launchers.embedded_child", "--config"]
    sent = json.loads(launch.argv[4])
    assert sent == config.to_dict() and sent["api_keys"] == ["a", "b"] and sent["parallel"] == 3
    assert launch.describe() == {"kind": "embedded", "config": sent, "argv": launch.argv, "pid": None}
    assert (launch.pid(), launch.exit_status()) == (None, None)  # not started


def test_scenario_flags_become_the_config() -> None:
    """The scenario's flags go through the llama-server argv and the stand-in's parser, like process/docker."""
    spec = ServerSpec(host="127.0.0.2", port=9009, flags={
        "parallel": 8, "c": 4096, "flash-attn": False, "threads": 2, "ngl": 99, "draft-max": 6, "alias": "a",
        "api-key": ["k1", "k2"], "cont-batching": True})
    assert embedded_config(spec, "/m.gguf", "/d.gguf") == EmbeddedConfig(
        model_path="/m.gguf", draft_model_path="/d.gguf", parallel=8, ctx_size=4096, flash_attn="off", threads=2,
        draft_n_max=6, alias="a", api_keys=("k1", "k2"), host="127.0.0.2", port=9009, metrics=True)


@pytest.mark.parametrize("flags, words", [
    ({"rope-scaling": "yarn"}, "server.flags: the embedded llama.cpp server does not support --rope-scaling yarn"),
    ({"parallel": 0}, "server.flags: parallel, threads and draft_n_max must be >= 1"),
    ({"flash-attn": "maybe"}, "server.flags: the embedded llama.cpp server rejects"),
])
def test_a_flag_the_embedded_server_cannot_take_is_a_scenario_error(flags: dict[str, object], words: str) -> None:
    with pytest.raises(ScenarioError) as info:
        embedded_config(ServerSpec(flags=flags), "/m.gguf", None)
    assert str(info.value).startswith(words)


# --- start() against a stand-in child ----------------------------------------------------------

def test_start_returns_the_url_the_child_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A URL split over two writes is read whole; the child runs with this checkout first on its PYTHONPATH."""
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    launch = launcher(tmp_path, "url")
    try:
        assert launch.start() == "http://127.0.0.1:5555"
        assert launch.pid() is not None and launch.exit_status() is None
    finally:
        launch.stop()
    assert launch.exit_status() is not None and launch.pid() is None
    first = (tmp_path / "server.log").read_text().splitlines()[0]
    assert first == f"PYTHONPATH={ROOT}{os.pathsep}/elsewhere"


def test_a_child_that_dies_names_the_cause_from_this_start_only(tmp_path: Path) -> None:
    """The log is appended to; an older start's error in it is not blamed for this one."""
    (tmp_path / "server.log").write_text("0.00.001.000 E failed to open GGUF file '/old.gguf'\n")
    launch = launcher(tmp_path, "die")
    with pytest.raises(ServerExitedError) as info:
        launch.start()
    error = info.value
    assert error.returncode == 1
    assert error.cause is not None and "invalid magic characters" in error.cause
    assert error.hint == "the model file is not a GGUF file"
    assert str(error).startswith("embedded server exited with code 1 while starting: ")
    assert str(tmp_path / "server.log") in str(error)
    assert "/old.gguf" in (tmp_path / "server.log").read_text()  # appended, not truncated


def test_a_child_killed_by_a_signal_has_the_signal_as_its_cause(tmp_path: Path) -> None:
    with pytest.raises(ServerExitedError) as info:
        launcher(tmp_path, "sigill").start()
    assert info.value.returncode == -4
    assert info.value.cause == ("the server died of an illegal instruction (SIGILL): this binary uses CPU instructions "
                                "this host cannot run; last log line: init: llama threadpool init, n_threads = 2")
    assert info.value.hint is not None and "portable" in info.value.hint


def test_a_missing_model_or_draft_file_is_the_hint(tmp_path: Path) -> None:
    """Whatever the log says, a model path that is not a file is the likelier reason."""
    missing = EmbeddedConfig(model_path=str(tmp_path / "absent.gguf"))
    with pytest.raises(ServerExitedError) as info:
        launcher(tmp_path, "die", missing).start()
    assert info.value.hint == f"model file {tmp_path / 'absent.gguf'} does not exist"
    (tmp_path / "here.gguf").write_bytes(b"x")
    no_draft = EmbeddedConfig(model_path=str(tmp_path / "here.gguf"), draft_model_path=str(tmp_path / "d.gguf"))
    with pytest.raises(ServerExitedError) as info:
        launcher(tmp_path, "die", no_draft).start()
    assert info.value.hint == f"draft model file {tmp_path / 'd.gguf'} does not exist"


def test_a_child_that_never_loads_times_out_and_is_stopped(tmp_path: Path) -> None:
    launch = launcher(tmp_path, "hang", timeout_s=0.5)
    started = time.monotonic()
    with pytest.raises(ServerNotReadyError) as info:
        launch.start()
    assert 0.5 <= time.monotonic() - started < 8
    assert str(info.value) == (f"embedded server did not load {tmp_path / 'm.gguf'} within 0.5 s; "
                               f"see {tmp_path / 'server.log'}")
    assert launch.exit_status() is not None  # not left running
