"""orchestrate/server/launchers/docker.py without an engine: ``server.docker`` checked by key, the model
mounts and llama-server arguments, the ``docker run`` line shown by ``plan``, the container spec asked of
the engine, and leftover removal and pulls against a fake engine. Containers really run in
``tests/integration/test_docker_engine.py``."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import docker
import pytest

from orchestrate.errors import ScenarioError, ServerError
from orchestrate.scenario.spec import ServerSpec
from orchestrate.server.launchers import docker as launcher_module
from orchestrate.server.launchers.docker import (
    LABEL,
    DockerLauncher,
    connect,
    device_requests,
    docker_options,
    docker_run_line,
    engine_address,
    ensure_image,
    mounts_and_command,
    remove_leftovers,
)


def test_options_default_to_every_gpu_and_nothing_else() -> None:
    assert docker_options({}) == {"gpus": "all", "volumes": [], "entrypoint": None, "env": {}, "user": None}
    given = docker_options({"gpus": "none", "volumes": ["/data:/data"], "env": {"N": 2, "B": True}, "user": 1000,
                            "entrypoint": ["/bin/sh", "-c"]})
    assert given == {"gpus": "none", "volumes": ["/data:/data:rw"], "entrypoint": ["/bin/sh", "-c"],
                     "env": {"N": "2", "B": "True"}, "user": "1000"}


def test_a_list_of_gpus_becomes_device_ids_and_options_are_checked() -> None:
    assert docker_options({"gpus": [0, "GPU-3f"]})["gpus"] == ["0", "GPU-3f"]
    assert [dict(r) for r in device_requests(["0", "GPU-3f"])] == [
        {"Driver": "", "Count": 0, "DeviceIDs": ["0", "GPU-3f"], "Capabilities": [["gpu"]], "Options": {}}]
    assert [dict(r)["Count"] for r in device_requests("all")] == [-1]
    assert device_requests("none") == []
    for bad, key in (({"gpu": "all"}, "gpu"), ({"gpus": "some"}, "gpus"), ({"volumes": ["rel:/x"]}, "volumes"),
                     ({"volumes": ["/a:/models"]}, "volumes"), ({"entrypoint": "sh -c x"}, "entrypoint"),
                     ({"env": ["A=1"]}, "env"), ({"user": ""}, "user")):
        with pytest.raises(ScenarioError, match=rf"^server\.docker\.{key}: .*allowed keys: gpus, volumes"):
            docker_options(bad)


@pytest.mark.parametrize("bad, key", [
    ({"gpus": []}, "gpus"), ({"gpus": [True]}, "gpus"), ({"gpus": [1.5]}, "gpus"),
    ({"volumes": "/a:/b"}, "volumes"), ({"volumes": ["/a:/b:rx"]}, "volumes"), ({"volumes": ["/a:/b:ro:x"]}, "volumes"),
    ({"volumes": ["/a:/models-draft/"]}, "volumes"), ({"volumes": [7]}, "volumes"),
    ({"entrypoint": []}, "entrypoint"), ({"entrypoint": ["sh", 1]}, "entrypoint"),
    ({"env": {"A": [1]}}, "env"), ({"user": True}, "user"), ({"user": 1.5}, "user"),
])
def test_every_malformed_option_is_refused_by_name(bad: dict[str, Any], key: str) -> None:
    with pytest.raises(ScenarioError) as info:
        docker_options(bad)
    assert str(info.value).startswith(f"server.docker.{key}: ")


def spec(**changes: Any) -> ServerSpec:
    return ServerSpec(**{"launcher": "docker", "image": "llama:cuda", "flags": {"parallel": 4}, **changes})


def test_the_model_folder_is_mounted_read_only_and_named_inside() -> None:
    volumes, command = mounts_and_command(spec(docker={"volumes": ["/data:/data:ro"]}), "/m/a.gguf", None)
    assert volumes == ["/m:/models:ro", "/data:/data:ro"]
    assert command == ["--model", "/models/a.gguf", "--host", "0.0.0.0", "--port", "8080", "--metrics",
                       "--parallel", "4"]


def test_a_draft_beside_the_model_shares_its_mount(tmp_path: Path) -> None:
    volumes, command = mounts_and_command(spec(), "/m/a.gguf", "/m/b.gguf")
    assert volumes == ["/m:/models:ro"] and command[command.index("--model-draft") + 1] == "/models/b.gguf"
    volumes, command = mounts_and_command(spec(), "/m/a.gguf", "/d/b.gguf")
    assert volumes == ["/m:/models:ro", "/d:/models-draft:ro"]
    assert command[command.index("--model-draft") + 1] == "/models-draft/b.gguf"


def test_a_projector_is_mounted_and_named_inside() -> None:
    volumes, command = mounts_and_command(spec(flags={"mmproj": "/m/p.gguf"}), "/m/a.gguf", None)
    assert volumes == ["/m:/models:ro"] and command[command.index("--mmproj") + 1] == "/models/p.gguf"
    volumes, command = mounts_and_command(spec(flags={"mmproj": "/v/p.gguf"}), "/m/a.gguf", None)
    assert volumes == ["/m:/models:ro", "/v:/mmproj:ro"] and command[command.index("--mmproj") + 1] == "/mmproj/p.gguf"


def test_a_relative_model_path_is_mounted_by_its_absolute_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    volumes, _ = mounts_and_command(spec(), "models/a.gguf", None)
    assert volumes == [f"{tmp_path.resolve() / 'models'}:/models:ro"]


def test_the_docker_run_line_matches_the_options() -> None:
    line = docker_run_line(spec(host="0.0.0.0", docker={"gpus": "none", "env": {"A": "1"}, "user": "1000:1000",
                                                        "entrypoint": ["/app/llama-server", "--verbose"]}),
                           "/m/a.gguf", None, "9000")
    assert line == ["docker", "run", "--rm", "-v", "/m:/models:ro", "-p", "0.0.0.0:9000:8080", "-e", "A=1",
                    "--user", "1000:1000", "--entrypoint", "/app/llama-server", "llama:cuda", "--verbose",
                    "--model", "/models/a.gguf", "--host", "0.0.0.0", "--port", "8080", "--metrics", "--parallel", "4"]
    assert docker_run_line(spec(), "/m/a.gguf", None, "1")[3:5] == ["--gpus", "all"]


def launcher(tmp_path: Path, **changes: Any) -> DockerLauncher:
    model = tmp_path / "models" / "a.gguf"
    model.parent.mkdir(exist_ok=True)
    model.write_bytes(b"GGUF")
    (tmp_path / "v").mkdir(exist_ok=True)
    return DockerLauncher(spec(**changes), str(model), None, tmp_path / "v" / "server.log")


def test_the_container_spec_is_labelled_with_its_owner_and_published_where_asked(tmp_path: Path) -> None:
    """Made without an engine: no connection until ``start()``."""
    made = launcher(tmp_path, port=9123)
    container = made.spec
    assert container["image"] == "llama:cuda" and container["name"].startswith("tokenswarm-v-")
    assert container["ports"] == {"8080/tcp": ("127.0.0.1", 9123)}
    assert container["volumes"] == [f"{tmp_path / 'models'}:/models:ro"]
    assert container["labels"] == {LABEL: "1", f"{LABEL}.owner_pid": str(os.getpid()),
                                   f"{LABEL}.owner_host": socket.gethostname(),
                                   f"{LABEL}.log": str((tmp_path / "v" / "server.log").resolve())}
    assert [dict(r)["Count"] for r in container["device_requests"]] == [-1]
    assert "entrypoint" not in container and "user" not in container and container["environment"] == {}
    assert made.client is None and made.exit_status() is None and made.memory_bytes() is None
    made.stop()  # nothing was created: nothing to stop, and no engine asked
    assert made.describe()["container_id"] is None and made.describe()["container_name"] == container["name"]
    assert launcher(tmp_path).spec["name"] != launcher(tmp_path).spec["name"]


def test_entrypoint_and_user_go_into_the_spec_only_when_given(tmp_path: Path) -> None:
    container = launcher(tmp_path, docker={"entrypoint": ["/x"], "user": 0, "gpus": "none"}).spec
    assert container["entrypoint"] == ["/x"] and container["user"] == "0" and container["device_requests"] == []


def test_a_model_missing_on_this_host_is_refused_before_the_engine(tmp_path: Path) -> None:
    """dockerd would otherwise mount an empty folder in its place."""
    with pytest.raises(ServerError, match=r"^server\.model: .*nope\.gguf does not exist on this host"):
        DockerLauncher(spec(), str(tmp_path / "nope.gguf"), None, tmp_path / "server.log")
    model = tmp_path / "a.gguf"
    model.write_bytes(b"GGUF")
    with pytest.raises(ServerError, match=r"^server\.draft_model: "):
        DockerLauncher(spec(), str(model), str(tmp_path / "d.gguf"), tmp_path / "server.log")


# --- against a fake engine -------------------------------------------------------------------------------

class FakeContainer:
    def __init__(self, name: str, labels: dict[str, str], gone: bool = False) -> None:
        self.name, self.labels, self.gone, self.removed = name, labels, gone, False

    def remove(self, force: bool = False) -> None:
        if self.gone:
            raise docker.errors.NotFound("gone")
        self.removed = True


class FakeEngine:
    def __init__(self, containers: list[FakeContainer] | None = None, ping_error: Exception | None = None,
                 image_present: bool = True, pull_events: list[dict[str, Any]] | None = None) -> None:
        self.ping_error, self.image_present, self.pull_events = ping_error, image_present, pull_events or []
        owner = self
        self.asked_filters: list[Any] = []

        class Containers:
            def list(self, all: bool = False, filters: Any = None) -> list[FakeContainer]:
                owner.asked_filters.append(filters)
                return containers or []

        class Images:
            def get(self, image: str) -> object:
                if not owner.image_present:
                    raise docker.errors.ImageNotFound(image)
                return object()

        class Api:
            base_url = "http+docker://localhost"

            def pull(self, repository: str, tag: str, stream: bool, decode: bool) -> list[dict[str, Any]]:
                owner.pulled = (repository, tag)
                return owner.pull_events

        self.containers, self.images, self.api = Containers(), Images(), Api()
        self.pulled: tuple[str, str] | None = None

    def ping(self) -> bool:
        if self.ping_error:
            raise self.ping_error
        return True


def dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_only_containers_of_a_gone_orchestrator_on_this_host_are_removed() -> None:
    here = socket.gethostname()
    dead = str(dead_pid())
    mine = {LABEL: "1", f"{LABEL}.owner_host": here}
    containers = [FakeContainer("dead", {**mine, f"{LABEL}.owner_pid": dead}),
                  FakeContainer("alive", {**mine, f"{LABEL}.owner_pid": str(os.getpid())}),
                  FakeContainer("elsewhere", {LABEL: "1", f"{LABEL}.owner_host": "other-host", f"{LABEL}.owner_pid": dead}),
                  FakeContainer("unlabelled-pid", {**mine, f"{LABEL}.owner_pid": "x"}),
                  FakeContainer("already-gone", {**mine, f"{LABEL}.owner_pid": dead}, gone=True)]
    engine = FakeEngine(containers)
    assert remove_leftovers(engine) == ["dead"]
    assert [c.removed for c in containers] == [True, False, False, False, False]
    assert engine.asked_filters == [{"label": f"{LABEL}=1"}]


def test_no_engine_is_one_line_naming_where_it_was_looked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///tmp/none.sock")
    engine = FakeEngine(ping_error=docker.errors.DockerException("refused"))
    with pytest.raises(ServerError) as info:
        connect(engine)
    assert str(info.value).startswith("docker: no Docker engine at unix:///tmp/none.sock (DOCKER_HOST);")
    assert connect(FakeEngine()) is not None
    monkeypatch.delenv("DOCKER_HOST")
    assert engine_address() == launcher_module.DEFAULT_ENGINE


def test_an_image_is_used_if_present_else_pulled_and_a_registry_error_is_named() -> None:
    present = FakeEngine()
    ensure_image(present, "llama:cuda")
    assert present.pulled is None
    refused = FakeEngine(image_present=False, pull_events=[{"status": "Pulling"},
                                                           {"error": "manifest unknown\nmore detail"}])
    with pytest.raises(ServerError) as info:
        ensure_image(refused, "ghcr.io/x/llama:server-cuda")
    assert refused.pulled == ("ghcr.io/x/llama", "server-cuda")
    assert str(info.value) == ("server.image: ghcr.io/x/llama:server-cuda is not present locally and cannot be "
                               "pulled (manifest unknown); pull or load it, or set server.image")
    untagged = FakeEngine(image_present=False, pull_events=[{"error": "denied"}])
    with pytest.raises(ServerError):
        ensure_image(untagged, "llama")
    assert untagged.pulled == ("llama", "latest")


def test_the_gpus_charged_are_the_containers(tmp_path: Path) -> None:
    assert launcher(tmp_path).gpus() is None  # gpus: all
    assert launcher(tmp_path, docker={"gpus": [0, "GPU-abc"]}).gpus() == ("0", "GPU-abc")
    assert launcher(tmp_path, docker={"gpus": "none"}).gpus() == ()
