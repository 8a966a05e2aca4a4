"""The docker launcher: llama.cpp's server image on a GPU host, through the docker SDK.

Stage: server. The image's entrypoint is ``llama-server`` (llama.cpp's ``server-cuda`` images), so the
container command is just its arguments. The model's folder is mounted read-only at ``/models`` (the
draft's at ``/models-draft`` when it lives elsewhere), the server listens on 8080 inside and is
published on ``server.host`` (127.0.0.1 unless asked otherwise) at ``server.port`` or a free port. Every
container carries labels that name the orchestrator's pid, so a later run removes what a crashed one
left behind (``remove_leftovers``). Any Docker-API engine works: dockerd, or ``podman system service``
(what the tests use).
"""

from __future__ import annotations

import os
import secrets
import socket
import sys
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import docker
import requests
from docker.models.containers import Container

from orchestrate.errors import ScenarioError, ServerError, ServerExitedError
from orchestrate.scenario.flags import llama_server_argv
from orchestrate.scenario.spec import ServerSpec
from orchestrate.server.diagnose import diagnose
from orchestrate.server.launchers.base import LOCAL_HOSTS, Launcher, free_port

CONTAINER_PORT = 8080
MODELS_DIR = "/models"
DRAFT_MODELS_DIR = "/models-draft"
MMPROJ_DIR = "/mmproj"
"""Where a multimodal projector (``flags: {mmproj: FILE}``) in another folder than the model is mounted."""
DOCKER_OPTIONS = ("gpus", "volumes", "entrypoint", "env", "user")
"""Keys of ``server.docker``; anything else is refused by name."""
LABEL = "tokenswarm"
"""Every container of ours has ``tokenswarm=1``; ``tokenswarm.owner_pid``/``.owner_host``/``.log`` say whose."""
STOP_TIMEOUT_S = 5
"""Seconds between the container's SIGTERM and SIGKILL."""
LOG_JOIN_S = 2.0
"""How long ``exit_status()`` waits for the log thread to write an exited container's last lines."""
DEFAULT_ENGINE = "unix:///var/run/docker.sock"
_ENGINE_ERRORS = (docker.errors.DockerException, requests.RequestException)


def _fail(key: str, message: str) -> ScenarioError:
    return ScenarioError(f"server.docker.{key}: {message}; allowed keys: {', '.join(DOCKER_OPTIONS)}")


def _parse_volume(item: Any) -> str:
    """``HOST:CONTAINER[:ro|rw]`` with absolute paths, returned as the SDK's ``volumes`` string."""
    parts = item.split(":") if isinstance(item, str) else []
    if len(parts) == 2:
        parts.append("rw")
    if len(parts) != 3 or not all(p.startswith("/") for p in parts[:2]) or parts[2] not in ("ro", "rw"):
        raise _fail("volumes", f"each entry must be 'HOST:CONTAINER[:ro|rw]' with absolute paths, got {item!r}")
    if parts[1].rstrip("/") in (MODELS_DIR, DRAFT_MODELS_DIR):
        raise _fail("volumes", f"{parts[1]} is where tokenswarm mounts the model; mount elsewhere")
    return ":".join(parts)


def docker_options(options: dict[str, Any]) -> dict[str, Any]:
    """Validate ``server.docker``; returns it with defaults filled in (``gpus: all``)."""
    for key in options:
        if key not in DOCKER_OPTIONS:
            raise _fail(str(key), "unknown key")
    gpus = options.get("gpus", "all")
    if not (gpus in ("all", "none") or (isinstance(gpus, list) and gpus
                                       and all(isinstance(g, (str, int)) and not isinstance(g, bool) for g in gpus))):
        raise _fail("gpus", f"must be 'all', 'none' or a list of device ids ([0, 1] or GPU UUIDs), got {gpus!r}")
    volumes = options.get("volumes", [])
    if not isinstance(volumes, list):
        raise _fail("volumes", f"must be a list of 'HOST:CONTAINER[:ro|rw]', got {volumes!r}")
    entrypoint = options.get("entrypoint")
    if entrypoint is not None and not (isinstance(entrypoint, list) and entrypoint
                                       and all(isinstance(a, str) for a in entrypoint)):
        raise _fail("entrypoint", f"must be a non-empty list of strings, got {entrypoint!r}")
    env = options.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(k, str) and isinstance(v, (str, int, float, bool))
                                            for k, v in env.items()):
        raise _fail("env", f"must be a mapping of NAME: value, got {env!r}")
    user = options.get("user")
    if user is not None and (not isinstance(user, (str, int)) or isinstance(user, bool) or user == ""):
        raise _fail("user", f"must be a user name or 'UID[:GID]', got {user!r}")
    return {"gpus": [str(g) for g in gpus] if isinstance(gpus, list) else gpus,
            "volumes": [_parse_volume(v) for v in volumes], "entrypoint": entrypoint,
            "env": {k: str(v) for k, v in env.items()}, "user": None if user is None else str(user)}


def mounts_and_command(spec: ServerSpec, model: str, draft_model: str | None) -> tuple[list[str], list[str]]:
    """The read-only model mounts and the llama-server arguments with container paths.

    Pure (no engine, no file check), so ``tokenswarm plan`` shows exactly what the launcher runs.
    """
    model_folder = str(Path(model).resolve().parent)
    volumes = [f"{model_folder}:{MODELS_DIR}:ro"]
    container_draft = None
    if draft_model:
        folder = str(Path(draft_model).resolve().parent)
        target = MODELS_DIR if folder == model_folder else DRAFT_MODELS_DIR
        if target == DRAFT_MODELS_DIR:
            volumes.append(f"{folder}:{DRAFT_MODELS_DIR}:ro")
        container_draft = f"{target}/{Path(draft_model).name}"
    mmproj = spec.flags.get("mmproj")
    if isinstance(mmproj, str) and mmproj:  # the projector's folder mounted too, the flag its path inside
        folder = str(Path(mmproj).resolve().parent)
        target = MODELS_DIR if folder == model_folder else MMPROJ_DIR
        if target == MMPROJ_DIR:
            volumes.append(f"{folder}:{MMPROJ_DIR}:ro")
        spec = replace(spec, flags={**spec.flags, "mmproj": f"{target}/{Path(mmproj).name}"})
    command = llama_server_argv(spec, f"{MODELS_DIR}/{Path(model).name}", container_draft, "0.0.0.0",
                                CONTAINER_PORT)
    return volumes + docker_options(spec.docker)["volumes"], command


def docker_run_line(spec: ServerSpec, model: str, draft_model: str | None, host_port: str) -> list[str]:
    """The ``docker run`` equivalent of what the launcher asks the engine for."""
    options = docker_options(spec.docker)
    volumes, command = mounts_and_command(spec, model, draft_model)
    gpus = options["gpus"]
    args = ["docker", "run", "--rm"] + ([] if gpus == "none" else
                                        ["--gpus", "all" if gpus == "all" else f'"device={",".join(gpus)}"'])
    for volume in volumes:
        args += ["-v", volume]
    args += ["-p", f"{spec.host}:{host_port}:{CONTAINER_PORT}"]
    args += [a for k, v in options["env"].items() for a in ("-e", f"{k}={v}")]
    args += ["--user", options["user"]] if options["user"] else []
    entrypoint = options["entrypoint"] or []
    args += ["--entrypoint", entrypoint[0]] if entrypoint else []
    return args + [spec.image, *entrypoint[1:], *command]


def device_requests(gpus: str | list[str]) -> list[docker.types.DeviceRequest]:
    """``all`` → every GPU (``--gpus all``), a list → those device ids, ``none`` → no request."""
    if gpus == "none":
        return []
    if gpus == "all":
        return [docker.types.DeviceRequest(count=-1, capabilities=[["gpu"]])]
    return [docker.types.DeviceRequest(device_ids=list(gpus), capabilities=[["gpu"]])]


def engine_address(client: docker.DockerClient | None = None) -> str:
    """Where the engine is expected: ``DOCKER_HOST``, else the default socket (for messages)."""
    if client is not None and not str(client.api.base_url).startswith("http+docker://"):
        return str(client.api.base_url)
    return os.environ.get("DOCKER_HOST") or DEFAULT_ENGINE


def connect(client: docker.DockerClient | None = None) -> docker.DockerClient:
    """A client whose engine answers ``ping``; one-line ``ServerError`` when there is none."""
    try:
        client = client or docker.from_env()
        client.ping()
        return client
    except _ENGINE_ERRORS:
        raise ServerError(f"docker: no Docker engine at {engine_address(client)} (DOCKER_HOST); start dockerd "
                          f"or `podman system service`, or use launcher: process/embedded") from None


def ensure_image(client: docker.DockerClient, image: str) -> None:
    """The image is present locally, or pulled now; one-line ``ServerError`` naming it otherwise."""
    try:
        client.images.get(image)
        return
    except docker.errors.ImageNotFound:
        pass
    except _ENGINE_ERRORS as exc:
        raise ServerError(f"server.image: cannot inspect {image}: {_reason(exc)}") from None
    print(f"tokenswarm: pulling {image} (not present locally) ...", file=sys.stderr, flush=True)
    repository, tag = docker.utils.parse_repository_tag(image)
    error = None
    try:  # the stream carries the registry's own error; images.pull() would hide it behind a 404
        for event in client.api.pull(repository, tag=tag or "latest", stream=True, decode=True):
            error = error or (event.get("error") if isinstance(event, dict) else None)
        if error is None:
            client.images.get(image)
    except _ENGINE_ERRORS as exc:
        error = error or _reason(exc)
    if error is not None:
        raise ServerError(f"server.image: {image} is not present locally and cannot be pulled "
                          f"({str(error).splitlines()[0]}); pull or load it, or set server.image")


def check_engine(images: list[str]) -> None:
    """Before a run: the engine answers and every image is there (or pulled); ``ServerError`` if not."""
    client = connect()
    try:
        for image in dict.fromkeys(images):
            ensure_image(client, image)
    finally:
        client.close()


def _reason(exc: BaseException) -> str:
    text = getattr(exc, "explanation", None) or str(exc) or type(exc).__name__
    return str(text).splitlines()[0] if str(text).strip() else type(exc).__name__


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def remove_leftovers(client: docker.DockerClient) -> list[str]:
    """Remove tokenswarm containers of this host whose orchestrator (owner pid) is gone; their names."""
    removed = []
    for container in client.containers.list(all=True, filters={"label": f"{LABEL}=1"}):
        labels = container.labels or {}
        if labels.get(f"{LABEL}.owner_host", socket.gethostname()) != socket.gethostname():
            continue  # a pid of another machine sharing this engine means nothing here
        try:
            pid = int(labels.get(f"{LABEL}.owner_pid", ""))
        except ValueError:
            continue
        if pid > 0 and _alive(pid):
            continue
        try:
            container.remove(force=True)
            removed.append(container.name)
        except docker.errors.NotFound:
            continue
    return removed


class DockerLauncher(Launcher):
    """llama-server in a container of ``spec.image``; see the module docstring.

    :param model, draft_model: host paths (``tiny`` already generated); their folders are mounted.
    :param client: a docker client to use (the tests' podman); default ``docker.from_env()``.
    """

    kind = "docker"
    memory_source = "container"

    def __init__(self, spec: ServerSpec, model: str, draft_model: str | None, log_path: Path,
                 client: docker.DockerClient | None = None) -> None:
        super().__init__(log_path)
        options = docker_options(spec.docker)
        self.image = spec.image
        self._gpus = options["gpus"]
        self.host = spec.host
        self.port = spec.port or free_port(spec.host)
        self.client = client
        self._own_client = client is None
        for key, path in (("model", model), ("draft_model", draft_model)):
            if path and not Path(path).is_file():  # dockerd would mount an empty folder in its place
                raise ServerError(f"server.{key}: {path} does not exist on this host "
                                  f"(the docker launcher mounts its folder read-only at {MODELS_DIR})")
        volumes, command = mounts_and_command(spec, model, draft_model)
        name = f"tokenswarm-{log_path.parent.name or 'server'}-{secrets.token_hex(3)}"
        self.spec: dict[str, Any] = {
            "image": self.image, "command": command, "name": name,
            "volumes": volumes,
            "device_requests": device_requests(options["gpus"]),
            "ports": {f"{CONTAINER_PORT}/tcp": (self.host, self.port)},
            "labels": {LABEL: "1", f"{LABEL}.owner_pid": str(os.getpid()),
                       f"{LABEL}.owner_host": socket.gethostname(), f"{LABEL}.log": str(log_path.resolve())},
            "environment": options["env"]}
        """Keyword arguments of ``containers.create``: exactly what is asked of the engine."""
        if options["entrypoint"] is not None:
            self.spec["entrypoint"] = options["entrypoint"]
        if options["user"] is not None:
            self.spec["user"] = options["user"]
        self.container: Container | None = None
        self.leftovers_removed: list[str] = []
        self._exit_code: int | None = None
        self._log_thread: threading.Thread | None = None
        self._stopped = False

    def create(self) -> Container:
        """Connect, clear leftovers, make sure the image is there, create (not start) the container."""
        if self.container is None:
            self.client = connect(self.client)
            self.leftovers_removed = remove_leftovers(self.client)
            if self.leftovers_removed:
                print(f"tokenswarm: removed container(s) left by a tokenswarm run that no longer runs: "
                      f"{', '.join(self.leftovers_removed)}", file=sys.stderr, flush=True)
            ensure_image(self.client, self.image)
            try:
                self.container = self.client.containers.create(**self.spec)
            except _ENGINE_ERRORS as exc:
                raise ServerError(f"docker: cannot create a container of {self.image}: {_reason(exc)}") from None
        return self.container

    def _start(self) -> str:
        container = self.create()
        self._started_at = time.monotonic()  # readiness counts from the container's start, not the pull
        try:
            container.start()
        except _ENGINE_ERRORS as exc:  # e.g. dockerd without the NVIDIA toolkit refuses the GPU request
            reason = _reason(exc)
            raise ServerExitedError(f"docker: cannot start the container of {self.image}: {reason}",
                                    cause=reason, hint=diagnose([reason]).hint) from None
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_thread = threading.Thread(target=self._follow_logs, args=(container,),
                                            name="tokenswarm-docker-logs", daemon=True)
        self._log_thread.start()
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::") or self.host in LOCAL_HOSTS else self.host
        return f"http://{host}:{self.port}"

    def _follow_logs(self, container: Container) -> None:
        """Copy the container's stdout and stderr into ``server.log`` until the stream ends."""
        with open(self.log_path, "ab") as log:
            try:
                for chunk in container.logs(stream=True, follow=True):
                    log.write(chunk)
                    log.flush()
            except _ENGINE_ERRORS:  # the container was removed while we read: nothing more to copy
                pass

    def exit_status(self) -> int | None:
        if self._exit_code is not None or self.container is None or self._stopped:
            return self._exit_code
        try:
            self.container.reload()
        except docker.errors.NotFound:  # removed behind our back: it is not serving any more
            self._exit_code = -1
            return self._exit_code
        except _ENGINE_ERRORS:
            return None  # the engine did not answer this time; the health poll and load will tell
        if self.container.status in ("exited", "dead"):
            self._exit_code = int(self.container.attrs["State"]["ExitCode"])
            if self._log_thread is not None:  # the diagnosis reads server.log: let the last lines land
                self._log_thread.join(LOG_JOIN_S)
        return self._exit_code

    def stop(self) -> None:
        if self.container is None or self._stopped:
            return
        self._stopped = True
        try:
            self.container.stop(timeout=STOP_TIMEOUT_S)
            self.container.reload()
            if self._exit_code is None and self.container.status in ("exited", "dead"):
                self._exit_code = int(self.container.attrs["State"]["ExitCode"])
        except _ENGINE_ERRORS:
            pass  # never started, already exited or gone: removing is what matters
        try:
            self.container.remove(force=True)
        except docker.errors.NotFound:
            pass
        except _ENGINE_ERRORS as exc:
            print(f"tokenswarm: warning: could not remove container {self.container.name}: {_reason(exc)}; "
                  f"the next docker run removes it (label {LABEL}=1)", file=sys.stderr, flush=True)
        if self._log_thread is not None:
            self._log_thread.join(STOP_TIMEOUT_S)
        if self._own_client and self.client is not None:
            self.client.close()

    def memory_bytes(self) -> int | None:
        """The container's memory in use, as ``docker stats`` shows it (usage less inactive page cache)."""
        if self.container is None or self._stopped:
            return None
        try:
            stats = self.container.stats(stream=False, one_shot=True)["memory_stats"]
            usage = int(stats["usage"])
            detail = stats.get("stats") or {}
            cache = detail.get("inactive_file", detail.get("total_inactive_file", 0))
            return usage - int(cache) if 0 <= int(cache) < usage else usage
        except Exception:  # noqa: BLE001 - the sampler's contract: never raise
            return None

    def gpus(self) -> tuple[str, ...] | None:
        """The devices the container was given (``docker: {gpus: [0, 1]}``); none for ``gpus: none``."""
        return None if self._gpus == "all" else () if self._gpus == "none" else tuple(self._gpus)

    def describe(self) -> dict[str, object]:
        return {"kind": self.kind, "image": self.image, "container": self.spec, "url": self.url,
                "container_id": None if self.container is None else self.container.id,
                "container_name": self.spec["name"], "leftovers_removed": self.leftovers_removed}
