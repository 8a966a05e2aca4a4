"""orchestrate/server/launchers/process.py: a native ``llama-server`` as a process group — the binary found,
its argv, and ``stop()`` ending it and whatever it spawned. The "server" is a small python stand-in that
serves ``/health`` and forks a child (real llama.cpp runs in ``tests/integration/test_process_launcher_faults.py``)."""

from __future__ import annotations

import os
import stat
import sys
import textwrap
import time
from pathlib import Path

import pytest

from orchestrate.errors import ServerError
from orchestrate.scenario.spec import ServerSpec
from orchestrate.server.launchers import process
from orchestrate.server.launchers.process import ProcessLauncher, find_binary

STAND_IN = f"""\
#!{sys.executable}
import subprocess, sys
from http.server import BaseHTTPRequestHandler, HTTPServer
args = sys.argv[1:]
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
open(args[args.index("--model") + 1] + ".child", "w").write(str(child.pid))
print("listening", " ".join(args), flush=True)

class Health(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"{{}}")

    def log_message(self, *a):
        pass

HTTPServer((args[args.index("--host") + 1], int(args[args.index("--port") + 1])), Health).serve_forever()
"""


def executable(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text))
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is not alive: it waits to be reaped
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def test_a_binary_is_a_path_or_a_name_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    binary = executable(tmp_path / "my-llama-server", "#!/bin/sh\n")
    assert find_binary(str(binary)) == str(binary)
    with pytest.raises(ServerError, match=r"^server\.binary: /nope/llama-server does not exist$"):
        find_binary("/nope/llama-server")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_binary("my-llama-server") == str(binary)
    monkeypatch.setattr(process, "cached_binary", lambda: None)
    with pytest.raises(ServerError, match=r"^server\.binary: 'llama-server' is not on PATH; .*make llama-server"):
        find_binary("llama-server")
    built = executable(tmp_path / "built", "#!/bin/sh\n")
    monkeypatch.setattr(process, "cached_binary", lambda: built)
    assert find_binary("llama-server") == str(built), "plain llama-server: the build of `make llama-server`"
    with pytest.raises(ServerError):
        find_binary("other-server")  # only llama-server falls back to the build


def test_the_argv_is_the_binary_and_llama_servers_flags(tmp_path: Path) -> None:
    binary = executable(tmp_path / "llama-server", "#!/bin/sh\n")
    launcher = ProcessLauncher(ServerSpec(launcher="process", binary=str(binary), flags={"parallel": 2}, port=8123),
                               "/m/a.gguf", "/m/d.gguf", tmp_path / "server.log")
    assert launcher.argv == [str(binary), "--model", "/m/a.gguf", "--host", "127.0.0.1", "--port", "8123",
                             "--metrics", "--model-draft", "/m/d.gguf", "--parallel", "2"]
    assert launcher.describe() == {"kind": "process", "argv": launcher.argv, "pid": None}
    assert launcher.exit_status() is None and launcher.memory_bytes() is None
    launcher.stop()  # never started: nothing to stop
    free = ProcessLauncher(ServerSpec(launcher="process", binary=str(binary)), "/m/a.gguf", None, tmp_path / "l")
    assert 0 < free.port < 65536 and free.argv[free.argv.index("--port") + 1] == str(free.port)


def test_a_server_started_then_stopped_with_everything_it_spawned(tmp_path: Path) -> None:
    binary = executable(tmp_path / "llama-server", STAND_IN)
    model = tmp_path / "a.gguf"
    log = tmp_path / "v" / "server.log"
    launcher = ProcessLauncher(ServerSpec(launcher="process", binary=str(binary), host="0.0.0.0"), str(model), None, log)
    with launcher:
        url = launcher.start()
        assert url == f"http://127.0.0.1:{launcher.port}", "a server bound to every interface is reached locally"
        launcher.wait_ready(20)
        pid = launcher.pid()
        assert pid is not None and launcher.describe()["pid"] == pid and launcher.exit_status() is None
        child = int(Path(f"{model}.child").read_text())
        memory = launcher.memory_bytes()
        assert memory is not None and memory > 0
        assert log.read_text().startswith("listening --model ")
    assert launcher.exit_status() is not None
    deadline = time.monotonic() + 5
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child), "the server's own children go with it (its process group)"


def test_a_server_that_exits_at_once_reports_its_code(tmp_path: Path) -> None:
    binary = executable(tmp_path / "llama-server", "#!/bin/sh\necho 'error: invalid argument: --bad'\nexit 1\n")
    launcher = ProcessLauncher(ServerSpec(launcher="process", binary=str(binary)), "/m/a.gguf", None,
                               tmp_path / "server.log")
    with launcher:
        launcher.start()
        with pytest.raises(ServerError) as info:
            launcher.wait_ready(20)
    assert launcher.exit_status() == 1 and "invalid argument" in str(info.value)
