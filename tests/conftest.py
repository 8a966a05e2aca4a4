"""Shared fixtures: the generated tiny model (and its draft), a started embedded server, the real
parts (llama.cpp's own ``llama-server`` built from PyPI's sdist, Gemma 3 270M, started through the
process launcher), and a real Docker-API engine (podman) with a test image for the docker launcher."""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import Any

import docker
import pytest
import requests

from orchestrate.report.repeats import NOISE_FLOOR_ENV
from orchestrate.server.launchers.base import Launcher
from orchestrate.server.launchers.embedded import EmbeddedConfig, EmbeddedLauncher
from orchestrate.standins.tinymodel import tiny_draft_spec, tiny_model_path
from tests.fixtures.fault_proxy import FaultProxy

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    # started in the background of a non-interactive shell (CI scripts, `cmd &`): SIGINT is ignored and
    # every process the tests start would inherit that, so the Ctrl-C tests could not press Ctrl-C
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True, scope="session")
def no_host_noise_floor(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """No test judges effects against a noise floor measured on this host before (``tokenswarm noise-floor``)."""
    old = os.environ.get(NOISE_FLOOR_ENV)
    os.environ[NOISE_FLOOR_ENV] = str(tmp_path_factory.mktemp("noise-floor") / "none.json")
    yield
    if old is None:
        del os.environ[NOISE_FLOOR_ENV]
    else:
        os.environ[NOISE_FLOOR_ENV] = old


@pytest.fixture
def fresh_dataset_cache() -> Iterator[None]:
    """No dataset index left over from another test (``load_sharegpt`` caches per process)."""
    from locustfiles.dataset import clear_cache
    clear_cache()
    yield
    clear_cache()


@pytest.fixture(scope="session")
def tiny_model() -> Path:
    """The cached tiny GGUF (built on first use under ``$TOKENSWARM_CACHE`` or ~/.cache)."""
    return tiny_model_path()


@pytest.fixture(scope="session")
def tiny_draft_model() -> Path:
    """The cached 1-layer draft that llama.cpp accepts for the tiny model."""
    return tiny_model_path(tiny_draft_spec())


# --- the real parts: llama-server build 11434 and Gemma 3 270M (docs/testing.md) --------------

@pytest.fixture(scope="session")
def llama_server_binary() -> Path:
    """The real ``llama-server``: ``$TOKENSWARM_LLAMA_SERVER``, else the cached build of
    ``make llama-server`` (``make test`` builds it first; about 13 min once per machine)."""
    from orchestrate.server.llama_recipe import cached_binary
    given = os.environ.get("TOKENSWARM_LLAMA_SERVER")
    found = Path(given) if given else cached_binary()
    if found is None or not found.is_file():
        pytest.fail("no real llama-server: run `make llama-server` (or set TOKENSWARM_LLAMA_SERVER)")
    return found


@pytest.fixture(scope="session")
def gemma_model() -> Path:
    """Gemma 3 270M Q4_K_M assembled from its package into the cache (``model: gemma-3-270m``)."""
    from orchestrate.server.packaged_models import packaged_model_path
    return packaged_model_path("gemma-3-270m")


@contextmanager
def start_real_server(folder: Path, binary: Path, flags: dict[str, Any] | None = None,
                      draft_model: str | None = None) -> Iterator[Launcher]:
    """The real ``llama-server`` with Gemma 3 270M through the process launcher, ready; stopped on exit."""
    from orchestrate.scenario.spec import ServerSpec
    from orchestrate.server.launchers import make_launcher
    spec = ServerSpec(launcher="process", binary=str(binary), model="gemma-3-270m", draft_model=draft_model,
                      flags={"parallel": 4, "ctx-size": 8192, "threads": 1, **(flags or {})})
    folder.mkdir(parents=True, exist_ok=True)
    with make_launcher(spec, folder / "server.log") as launcher:
        launcher.start()
        launcher.wait_ready(60)
        yield launcher


@pytest.fixture(scope="module")
def real_server(llama_server_binary: Path, gemma_model: Path,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[Launcher]:
    """One real server with Gemma for a module's tests (4 slots of 2,048 tokens)."""
    with start_real_server(tmp_path_factory.mktemp("real-server"), llama_server_binary) as launcher:
        yield launcher


@pytest.fixture
def own_real_server(llama_server_binary: Path, gemma_model: Path, tmp_path: Path) -> Iterator[Launcher]:
    """A real server of the test's own (4 slots of 2,048 tokens), for a test that kills or breaks it."""
    with start_real_server(tmp_path / "own-real-server", llama_server_binary) as launcher:
        yield launcher


@pytest.fixture
def fault_proxy(real_server: Launcher) -> Iterator[FaultProxy]:
    """The fault proxy (``tests/fixtures/fault_proxy.py``) in front of the module's real server: a chat
    completion whose prompt holds ``FAULT:<mode>`` gets that fault, every other request passes."""
    with FaultProxy(real_server.url or "") as proxy:
        yield proxy


@contextmanager
def reference_server(folder: Path, *flags: str) -> Iterator[str]:
    """``tokenswarm serve-synthetic`` with ``flags`` (truth file ``folder/truth.csv``); yields its URL.

    Stopped with SIGINT on exit, which flushes the truth and writes its last line (requests,
    connections, events, writes) to ``folder/server.log``.
    """
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / "server.log", "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "orchestrate.cli", "serve-synthetic", "--port", "0",
                                 "--truth-file", str(folder / "truth.csv"), *flags],
                                stdout=subprocess.PIPE, stderr=log, text=True)
    assert proc.stdout is not None
    line = proc.stdout.readline()
    assert "listening on http://127.0.0.1:" in line, line
    try:
        yield line.split()[-1]
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0


def reference_binary(folder: Path, *flags: str) -> Path:
    """An executable ``folder/llama-server`` that runs the reference server with ``flags`` and then the arguments a
    launcher gives llama-server (``--model M --host H --port P --metrics`` and the scenario's flags): the process
    launcher, and a tune, start it as they would start llama-server."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "llama-server"
    path.write_text(f"#!/bin/sh\nexec {shlex.join([sys.executable, '-m', 'orchestrate.tools.refserver_cli', *flags])}"
                    ' "$@"\n')
    path.chmod(0o755)
    return path


@contextmanager
def start_embedded(tmp_path: Path, ready_timeout_s: float = 30.0,
                   **config_overrides: Any) -> Iterator[EmbeddedLauncher]:
    """A started, ready embedded server (tiny model, 2 slots unless overridden); stopped on exit.

    The log goes to ``tmp_path/server.log``; the URL is ``launcher.url``.
    """
    config_overrides.setdefault("model_path", str(tiny_model_path()))
    config_overrides.setdefault("parallel", 2)
    launcher = EmbeddedLauncher(EmbeddedConfig(**config_overrides), tmp_path / "server.log")
    with launcher:
        launcher.start()
        launcher.wait_ready(ready_timeout_s)
        yield launcher


@pytest.fixture
def embedded(tmp_path: Path) -> Iterator[Callable[..., EmbeddedLauncher]]:
    """Factory: ``embedded(**config_overrides)`` starts a server that is stopped after the test."""
    with ExitStack() as stack:
        count = 0

        def factory(**config_overrides: Any) -> EmbeddedLauncher:
            nonlocal count
            count += 1
            folder = tmp_path / f"server{count}"
            folder.mkdir()
            server: AbstractContextManager[EmbeddedLauncher] = start_embedded(folder, **config_overrides)
            return stack.enter_context(server)

        yield factory


# A real Docker-API engine for the docker launcher's tests: Debian's podman with runc, serving the
# Docker API on a unix socket of its own (recipe and reasons in docs/testing.md). Nothing under /etc is
# touched: the engine's settings come from a containers.conf in a temporary folder.

PODMAN_CONF = """\
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"

[containers]
default_ulimits = ["nofile=20000:20000", "nproc=4096:4096"]
"""
"""crun (podman's default) refuses hybrid cgroups, runc works; podman's default nofile limit is
above the hard limit of some machines and is then refused."""
PODMAN_START_TIMEOUT_S = 30.0
TEST_IMAGE = "localhost/tokenswarm-test"
"""The test image: an almost empty root whose entrypoint is the llama-server stand-in
(``orchestrate.server.launchers.llama_server_shim``) run by this venv's python, mounted from the host."""


@pytest.fixture(scope="session")
def podman_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the engine's ``containers.conf`` (skips where podman cannot run here)."""
    missing = [tool for tool in ("podman", "runc") if shutil.which(tool) is None]
    if missing:
        pytest.skip(f"no container engine: {' and '.join(missing)} not installed "
                    f"(`make test` installs them as root: apt-get install podman runc)")
    if os.geteuid() != 0:
        pytest.skip("the podman engine of the docker tests runs rootful: run the tests as root")
    folder = tmp_path_factory.mktemp("podman")
    (folder / "containers.conf").write_text(PODMAN_CONF)
    return folder


def podman_env(home: Path) -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": str(home / "containers.conf")}


@pytest.fixture(scope="session")
def podman_socket(podman_home: Path) -> Iterator[str]:
    """``unix://.../podman.sock``: a ``podman system service`` started for this session."""
    folder = podman_home
    sock = folder / "podman.sock"
    url = f"unix://{sock}"
    with open(folder / "service.log", "wb") as log:
        service = subprocess.Popen(["podman", "system", "service", "--time=0", url], stdin=subprocess.DEVNULL,
                                   stdout=log, stderr=subprocess.STDOUT, env=podman_env(folder),
                                   start_new_session=True)
    try:
        deadline = time.monotonic() + PODMAN_START_TIMEOUT_S
        while not _engine_answers(url):
            if service.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"podman system service did not serve {url}: "
                            f"{(folder / 'service.log').read_text(errors='replace')[-2000:]}")
            time.sleep(0.1)
        yield url
    finally:
        service.terminate()
        try:
            service.wait(timeout=10)
        except subprocess.TimeoutExpired:
            service.kill()
            service.wait()


def _engine_answers(url: str) -> bool:
    try:
        client = docker.DockerClient(base_url=url, timeout=5)
    except (docker.errors.DockerException, requests.RequestException):
        return False
    try:
        return bool(client.ping())
    except (docker.errors.DockerException, requests.RequestException):
        return False
    finally:
        client.close()


@pytest.fixture(scope="session")
def docker_engine(podman_socket: str) -> Iterator[docker.DockerClient]:
    """A docker SDK client of the session's podman engine (skips where podman cannot run)."""
    client = docker.DockerClient(base_url=podman_socket)
    yield client
    client.close()


@pytest.fixture(scope="session")
def docker_test_image(docker_engine: docker.DockerClient, podman_home: Path) -> str:
    """The test image's tag; imported once (``podman import``), kept in the engine's storage."""
    entrypoint = [sys.executable, "-m", "orchestrate.server.launchers.llama_server_shim"]
    tag = f"{TEST_IMAGE}:{hashlib.sha256(json.dumps(entrypoint).encode()).hexdigest()[:12]}"
    try:
        docker_engine.images.get(tag)
        return tag
    except docker.errors.ImageNotFound:
        pass
    with tarfile.open(podman_home / "root.tar", "w") as tar:
        for name in ("usr", "usr/bin", "usr/lib", "usr/lib64", "usr/sbin", "etc", "dev", "proc", "sys", "run",
                     "root", "tmp", "var", "var/tmp"):
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if name.endswith("tmp") else 0o755
            tar.addfile(info)
        for link in ("bin", "lib", "lib64", "sbin"):  # merged /usr, as on the host it borrows from
            info = tarfile.TarInfo(link)
            info.type, info.linkname = tarfile.SYMTYPE, f"usr/{link}"
            tar.addfile(info)
    subprocess.run(["podman", "import", "--change", f"ENTRYPOINT {json.dumps(entrypoint)}",
                    str(podman_home / "root.tar"), tag], check=True, capture_output=True, env=podman_env(podman_home))
    return tag


@pytest.fixture(scope="session")
def docker_test_mounts() -> list[str]:
    """``server.docker.volumes`` that let the test image run this venv's python and the repo:
    the host's /usr and /etc, the Python prefix, the venv and the repo, all read-only."""
    import orchestrate
    paths = ["/usr", "/etc", sys.base_prefix, sys.prefix, str(Path(orchestrate.__file__).resolve().parents[1])]
    kept: list[str] = []
    for path in sorted({os.path.abspath(p) for p in paths}):
        if not any(path == k or path.startswith(k.rstrip("/") + "/") for k in kept):
            kept.append(path)
    return [f"{path}:{path}:ro" for path in kept]
