"""The docker launcher against a real Docker-API engine: podman + runc, started by ``conftest.py``.

No GPU and no registry here: the test image is an empty root that borrows the host's /usr, /etc,
Python and this repo (mounted read-only), and its entrypoint is the llama-server stand-in that
serves the tiny model with the embedded llama.cpp server. What a GPU host would get (the device
request) is asserted on the container spec sent to the engine. Without podman (or as non-root)
the engine tests skip with the reason; the no-engine case runs everywhere (the option checks and the
container spec built without an engine are in ``tests/unit/orchestrate/server/launchers/test_docker.py``).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import docker
import pytest

from orchestrate.errors import ServerExitedError
from orchestrate.scenario.spec import ServerSpec
from orchestrate.server.launchers import resolve_model
from orchestrate.server.launchers.docker import LABEL, DockerLauncher, remove_leftovers
from tests.helpers import read_jsonl, tokenswarm_run, write_scenario

pytestmark = pytest.mark.integration

FATAL_LINE = "/app/ggml/src/ggml-cuda/fattn.cu:110: fatal error"
ABORT_AT_LOAD = ["/bin/sh", "-c", f"echo '{FATAL_LINE}' >&2; sh -c 'kill -ABRT $$'"]
"""The reference study's abort: the fatal line, then SIGABRT (exit 134). The kill runs in a child
shell because PID 1 of a container ignores signals it has no handler for."""


def ours(client: docker.DockerClient, log: Path) -> list[Any]:
    """Containers (any state) whose ``tokenswarm.log`` label is this log."""
    return client.containers.list(all=True, filters={"label": f"{LABEL}.log={log.resolve()}"})


def docker_scenario(tmp_path: Path, image: str, docker_opts: dict[str, Any], **load: Any) -> Path:
    return write_scenario(tmp_path, server={"launcher": "docker", "image": image, "docker": docker_opts,
                                            "flags": {"parallel": 4, "threads": 1}, "ready_timeout_s": 60},
                          load=load or None)


def test_a_run_in_a_container_gives_exact_figures_and_removes_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, podman_socket: str, docker_engine: docker.DockerClient,
        docker_test_image: str, docker_test_mounts: list[str]) -> None:
    monkeypatch.setenv("DOCKER_HOST", podman_socket)
    scenario = docker_scenario(tmp_path, docker_test_image, {"gpus": "none", "volumes": docker_test_mounts},
                               users=4, num_prompts=12, max_tokens=24)
    proc, run = tokenswarm_run(tmp_path, scenario)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    variant = run / "v"
    summary = json.loads((variant / "summary.json").read_text())
    prompts, records = read_jsonl(variant / "prompts.jsonl"), read_jsonl(variant / "requests.jsonl")
    assert summary["status"] == "completed"
    assert summary["requests"] == {"sent": 12, "completed": 12, "errors": 0, "cancelled": 0, "no_content": 0, "short_replies": 0,
                                   "errors_by_class": {}, "unsent": 0}
    assert summary["tokens"]["output"] == sum(r["max_tokens"] for r in records) \
        == sum(p["max_tokens"] for p in prompts)
    assert summary["tokens"]["prompt"] == sum(p["prompt_tokens"] for p in prompts)
    assert summary["crosscheck_agrees"] is True
    assert summary["memory"]["source"] == "container" and summary["memory"]["peak_bytes"] > 0  # docker stats
    launcher = summary["server"]["launcher"]
    assert launcher["kind"] == "docker" and launcher["image"] == docker_test_image
    assert launcher["container"]["ports"] == {"8080/tcp": ["127.0.0.1", int(launcher["url"].rsplit(":", 1)[1])]}
    assert launcher["container"]["command"][:2] == ["--model", f"/models/{Path(resolve_model('tiny')).name}"]
    assert "server is listening" in (variant / "server.log").read_text()  # the container's own output
    assert ours(docker_engine, variant / "server.log") == []  # removed at the end


def test_container_spec_requests_every_gpu_and_mounts_the_model_read_only(
        tmp_path: Path, docker_engine: docker.DockerClient, docker_test_image: str) -> None:
    sent: list[dict[str, Any]] = []
    create = docker_engine.api.create_container

    def spy(*args: Any, **kwargs: Any) -> Any:  # what goes over the wire, then the real call
        sent.append(kwargs)
        return create(*args, **kwargs)

    model = Path(resolve_model("tiny"))
    spec = ServerSpec(launcher="docker", image=docker_test_image, flags={"parallel": 32, "flash-attn": False})
    launcher = DockerLauncher(spec, str(model), None, tmp_path / "server.log", client=docker_engine)
    with pytest.MonkeyPatch.context() as patch, launcher:
        patch.setattr(docker_engine.api, "create_container", spy)
        container = launcher.create()  # created, never started: there is no GPU here
        assert [dict(r) for r in sent[0]["host_config"]["DeviceRequests"]] == [
            {"Driver": "", "Count": -1, "DeviceIDs": [], "Capabilities": [["gpu"]], "Options": {}}]
        described = launcher.describe()
        assert described["container_id"] == container.id
        assert described["container"] == launcher.spec  # the full spec given to the engine
        assert launcher.spec["device_requests"] == sent[0]["host_config"]["DeviceRequests"]
        mounts = {m["Destination"]: m for m in container.attrs["Mounts"]}
        assert mounts["/models"]["Source"] == str(model.resolve().parent) and mounts["/models"]["RW"] is False
        assert container.attrs["HostConfig"]["PortBindings"]["8080/tcp"][0]["HostIp"] == "127.0.0.1"
        assert container.attrs["Config"]["Cmd"] == [
            "--model", f"/models/{model.name}", "--host", "0.0.0.0", "--port", "8080", "--metrics",
            "--parallel", "32", "--flash-attn", "off"]
        labels = container.attrs["Config"]["Labels"]
        assert labels[LABEL] == "1" and labels[f"{LABEL}.owner_pid"] == str(os.getpid())
        assert labels[f"{LABEL}.log"] == str((tmp_path / "server.log").resolve())
    assert ours(docker_engine, tmp_path / "server.log") == []  # stop() removed the never-started container
    launcher.stop()  # idempotent


def test_an_engine_that_refuses_the_gpu_request_is_a_load_failure_with_a_hint(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, docker_engine: docker.DockerClient,
        docker_test_image: str) -> None:
    refusal = 'could not select device driver "" with capabilities: [[gpu]]'  # dockerd without the toolkit

    def refuse(self: Any) -> None:
        raise docker.errors.APIError("500 Server Error", explanation=refusal)

    monkeypatch.setattr(docker.models.containers.Container, "start", refuse)
    spec = ServerSpec(launcher="docker", image=docker_test_image)
    with DockerLauncher(spec, resolve_model("tiny"), None, tmp_path / "server.log", client=docker_engine) as launcher:
        with pytest.raises(ServerExitedError) as failure:
            launcher.start()
    assert failure.value.cause == refusal
    assert failure.value.hint is not None and "NVIDIA container toolkit" in failure.value.hint
    assert ours(docker_engine, tmp_path / "server.log") == []


SIGILL_AT_LOAD = ["/bin/sh", "-c", "echo 'init: llama threadpool init, n_threads = 1' >&2; sh -c 'kill -ILL $$'"]
"""A build with instructions the host will not run (issue 20): llama.cpp's last line, then SIGILL (exit 132)."""


@pytest.mark.parametrize("entrypoint, exit_code, cause, hint_part", [
    (ABORT_AT_LOAD, 134, FATAL_LINE, "flash-attn: off"),
    (SIGILL_AT_LOAD, 132, "the server died of an illegal instruction (SIGILL): this binary uses CPU instructions "
                          "this host cannot run; last log line: init: llama threadpool init, n_threads = 1",
     "portable build or image"),
], ids=["abort", "sigill"])
def test_a_death_at_load_is_diagnosed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, podman_socket: str,
                                      docker_engine: docker.DockerClient, docker_test_image: str,
                                      docker_test_mounts: list[str], entrypoint: list[str], exit_code: int,
                                      cause: str, hint_part: str) -> None:
    monkeypatch.setenv("DOCKER_HOST", podman_socket)
    scenario = docker_scenario(tmp_path, docker_test_image,
                               {"gpus": "none", "volumes": docker_test_mounts, "entrypoint": entrypoint})
    proc, run = tokenswarm_run(tmp_path, scenario)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    summary = json.loads((run / "v" / "summary.json").read_text())
    assert summary["status"] == "failed_to_load"
    server = summary["server"]
    assert server["exit_code"] == exit_code
    assert server["cause"] == cause
    assert hint_part in server["hint"]
    assert any(cause.endswith(line) for line in server["log_tail"])
    assert ours(docker_engine, run / "v" / "server.log") == []


def test_leftovers_of_a_dead_orchestrator_are_removed(docker_engine: docker.DockerClient, docker_test_image: str,
                                                      tmp_path: Path) -> None:
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid that no longer runs (reuse within the test is practically impossible)
    created = []
    for owner in (dead.pid, os.getpid()):
        created.append(docker_engine.containers.run(
            docker_test_image, entrypoint=["/bin/sh", "-c", "sleep 600"], detach=True, volumes=["/usr:/usr:ro"],
            labels={LABEL: "1", f"{LABEL}.owner_pid": str(owner), f"{LABEL}.owner_host": socket.gethostname(),
                    f"{LABEL}.log": str(tmp_path / f"{owner}.log")}))
    leftover, alive = created
    try:
        leftover.reload()
        assert leftover.status == "running"
        assert remove_leftovers(docker_engine) == [leftover.name]
        names = [c.name for c in docker_engine.containers.list(all=True, filters={"label": f"{LABEL}=1"})]
        assert leftover.name not in names and alive.name in names  # our own pid is alive: kept
    finally:
        for container in created:
            try:
                container.remove(force=True)
            except docker.errors.NotFound:
                pass


def test_no_engine_is_one_line_and_exit_2(tmp_path: Path) -> None:
    missing = f"unix://{tmp_path}/no-engine.sock"
    scenario = docker_scenario(tmp_path, "ghcr.io/ggml-org/llama.cpp:server-cuda", {"gpus": "all"})
    proc = subprocess.run([sys.executable, "-m", "orchestrate.cli", "run", str(scenario),
                           "--results-dir", str(tmp_path / "results")],
                          capture_output=True, text=True, timeout=60, env={**os.environ, "DOCKER_HOST": missing})
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stderr.splitlines() == [
        f"tokenswarm: error: docker: no Docker engine at {missing} (DOCKER_HOST); start dockerd or "
        f"`podman system service`, or use launcher: process/embedded"]
    assert not (tmp_path / "results").exists()  # refused before any variant: no run folder of failures


def test_an_image_that_cannot_be_pulled_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 podman_socket: str) -> None:
    monkeypatch.setenv("DOCKER_HOST", podman_socket)
    scenario = docker_scenario(tmp_path, "localhost/tokenswarm-no-such-image:0", {"gpus": "none"})
    proc = subprocess.run([sys.executable, "-m", "orchestrate.cli", "run", str(scenario),
                           "--results-dir", str(tmp_path / "results")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if x.startswith("tokenswarm: error:")]
    assert line.startswith("tokenswarm: error: server.image: localhost/tokenswarm-no-such-image:0 is not present "
                           "locally and cannot be pulled (")


def test_the_real_llama_server_runs_in_a_container(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, podman_socket: str, docker_engine: docker.DockerClient,
        docker_test_image: str, docker_test_mounts: list[str], llama_server_binary: Path, gemma_model: Path) -> None:
    """As llama.cpp's ``server`` image runs it: ``/app/llama-server`` with its shared libraries beside
    it (the cached build's ``bin`` mounted at ``/app``), Gemma mounted at ``/models``, real ShareGPT."""
    monkeypatch.setenv("DOCKER_HOST", podman_socket)
    app = f"{llama_server_binary.resolve().parent}:/app:ro"
    scenario = write_scenario(
        tmp_path, server={"launcher": "docker", "image": docker_test_image, "model": "gemma-3-270m",
                          "docker": {"gpus": "none", "entrypoint": ["/app/llama-server"],
                                     "volumes": [*docker_test_mounts, app]},
                          "flags": {"parallel": 2, "ctx-size": 4096, "threads": 1}, "ready_timeout_s": 120},
        load={"dataset": "sharegpt-v3", "allow_truncated": True, "users": 2, "num_prompts": 4, "max_tokens": 16,
              "sampling": {"max_prompt_tokens": 128}})
    proc, run = tokenswarm_run(tmp_path, scenario, timeout_s=280)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((run / "v" / "summary.json").read_text())
    assert summary["status"] == "completed" and summary["requests"]["completed"] == 4
    facts = summary["server"]["facts"]
    assert facts["model_path"] == f"/models/{gemma_model.name}" and facts["total_slots"] == 2
    assert summary["server_metrics"]["agrees_with_records"] is True and summary["crosscheck_agrees"] is True
    assert summary["server"]["launcher"]["container"]["entrypoint"] == ["/app/llama-server"]
    assert "llama_server: listening on http://0.0.0.0:8080" in (run / "v" / "server.log").read_text()  # its own line
    assert ours(docker_engine, run / "v" / "server.log") == []


def test_images_through_a_projector_mounted_into_the_container(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, podman_socket: str, docker_engine: docker.DockerClient,
        docker_test_image: str, docker_test_mounts: list[str], llama_server_binary: Path) -> None:
    """``flags: {mmproj: ...}`` is a host file: its folder is mounted and the flag names it inside (here beside
    the tiny model, at ``/models``); the real ``llama-server`` in the container encodes the images."""
    from orchestrate.standins.tinyvision import MMPROJS, image_tokens, tiny_mmproj_path
    monkeypatch.setenv("DOCKER_HOST", podman_socket)
    app = f"{llama_server_binary.resolve().parent}:/app:ro"
    scenario = write_scenario(
        tmp_path, server={"launcher": "docker", "image": docker_test_image, "model": "tiny",
                          "docker": {"gpus": "none", "entrypoint": ["/app/llama-server"],
                                     "volumes": [*docker_test_mounts, app]},
                          "flags": {"parallel": 2, "ctx-size": 4096, "threads": 1, "mmproj": "tiny"},
                          "ready_timeout_s": 120},
        load={"dataset": "synthetic", "users": 2, "num_prompts": 6, "max_tokens": 8,
              "images": {"width": 64, "height": 64}})
    proc, run = tokenswarm_run(tmp_path, scenario, timeout_s=280)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = json.loads((run / "v" / "summary.json").read_text())
    command = summary["server"]["launcher"]["container"]["command"]
    assert command[command.index("--mmproj") + 1] == f"/models/{tiny_mmproj_path().name}"
    images = summary["request"]["images"]
    assert images["requests"] == 6 and images["image_tokens"]["max"] == image_tokens(MMPROJS["tiny"], 64, 64)
    assert ours(docker_engine, run / "v" / "server.log") == []
