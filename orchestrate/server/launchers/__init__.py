"""Server launchers: one small interface (``base.Launcher``), chosen by kind in ``LAUNCHERS`` (each kind's
factory and the command line ``tokenswarm plan`` prints).

Stage: server.
``make_launcher`` turns a scenario's ``ServerSpec`` into a launcher. Every kind reads the scenario's
flags through ``orchestrate.scenario.flags.llama_server_argv``.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from orchestrate.errors import ScenarioError
from orchestrate.scenario.flags import llama_server_argv
from orchestrate.scenario.spec import LAUNCHER_KINDS, ServerSpec
from orchestrate.server.launchers.base import LOCAL_HOSTS, Launcher


def resolve_model(name: str, build: bool = True) -> str:
    """``tiny``, ``tiny-draft``, ``tiny-deep``, ``tiny-deep-draft``, ``tiny-reranker`` → the generated GGUF;
    ``gemma-3-270m`` → the packaged real model (``orchestrate.server.packaged_models``); each built once and
    cached, unless ``build`` is False; anything else is a path."""
    from orchestrate.server.packaged_models import PACKAGED_MODELS, packaged_model_path
    from orchestrate.standins.tinymodel import MODELS, tiny_model_path
    if name in PACKAGED_MODELS:
        return str(packaged_model_path(name, build))
    if name == TINY_RERANKER:
        from orchestrate.standins.tinyrerank import tiny_reranker_path
        return str(tiny_reranker_path(build=build))
    return str(tiny_model_path(MODELS[name], build=build)) if name in MODELS else name


TINY_RERANKER = "tiny-reranker"
"""A generated reranking model (``standins.tinyrerank``) for ``llama-server --reranking``."""


def embedded_config(spec: ServerSpec, model: str, draft_model: str | None) -> Any:
    """The flags go through the same llama-server argv as for docker and process, then through the
    stand-in's parser (``llama_server_shim``), so all three read a scenario alike."""
    from orchestrate.server.launchers.embedded import EmbeddedConfig
    from orchestrate.server.launchers.llama_server_shim import config_of, parse_args
    try:
        argv = llama_server_argv(spec, model, draft_model, spec.host, spec.port)
        return EmbeddedConfig(**config_of(parse_args(argv)))  # type: ignore[arg-type]
    except ValueError as exc:
        raise ScenarioError(f"server.flags: {exc}") from None


def embedded_launcher(spec: ServerSpec, log_path: Path) -> Launcher:
    from orchestrate.server.launchers.embedded import EmbeddedLauncher
    spec = with_generated_mmproj(spec)
    return EmbeddedLauncher(embedded_config(spec, *models(spec)), log_path, start_timeout_s=spec.ready_timeout_s)


def models(spec: ServerSpec, build: bool = True) -> tuple[str, str | None]:
    """The model and draft paths a variant uses (the generated ones built unless ``build`` is False)."""
    return (resolve_model(spec.model, build),
            resolve_model(spec.draft_model, build) if spec.draft_model else None)


def with_generated_mmproj(spec: ServerSpec, build: bool = True) -> ServerSpec:
    """``flags: {mmproj: tiny}`` → the generated projector for the tiny model (``standins.tinyvision``), built once
    and cached unless ``build`` is False; any other value is a path, passed on as written."""
    name = spec.flags.get("mmproj")
    if not isinstance(name, str) or "/" in name or "." in name:  # a file: the generator (and gguf) not needed
        return spec
    from orchestrate.standins.tinyvision import MMPROJS, tiny_mmproj_path
    if name not in MMPROJS:
        return spec
    return replace(spec, flags={**spec.flags, "mmproj": str(tiny_mmproj_path(MMPROJS[name], build=build))})


def process_launcher(spec: ServerSpec, log_path: Path) -> Launcher:
    from orchestrate.server.launchers.process import ProcessLauncher
    spec = with_generated_mmproj(spec)
    return _flag_errors_as_scenario_errors(lambda: ProcessLauncher(spec, *models(spec), log_path))


def docker_launcher(spec: ServerSpec, log_path: Path) -> Launcher:
    from orchestrate.server.launchers.docker import DockerLauncher
    spec = with_generated_mmproj(spec)
    return _flag_errors_as_scenario_errors(lambda: DockerLauncher(spec, *models(spec), log_path))


def _flag_errors_as_scenario_errors(build: Callable[[], Launcher]) -> Launcher:
    try:
        return build()
    except ScenarioError:
        raise
    except ValueError as exc:  # a flag tokenswarm sets itself (orchestrate.scenario.flags)
        raise ScenarioError(str(exc)) from None


def external_launcher(spec: ServerSpec, log_path: Path) -> Launcher:
    from orchestrate.server.launchers.external import ExternalLauncher
    assert spec.url, "validated by orchestrate/scenario/parse.py"
    return ExternalLauncher(spec.url, log_path)


FREE_PORT = "<free port>"
"""In a plan's command line: the port a variant gets when it starts (``server.port`` unset)."""


def _shell(args: list[str]) -> str:
    return " ".join(a if FREE_PORT in a else shlex.quote(a) for a in args)


def _process_line(spec: ServerSpec, model: str, draft: str | None, port: str) -> str:
    argv = llama_server_argv(spec, model, draft, spec.host, spec.port)
    at = argv.index("--port")
    return _shell([spec.binary, *argv[:at + 1], port, *argv[at + 2:]])


def _docker_line(spec: ServerSpec, model: str, draft: str | None, port: str) -> str:
    from orchestrate.server.launchers.docker import docker_run_line
    return _shell(docker_run_line(spec, model, draft, port))


@dataclass(frozen=True)
class Kind:
    """A launcher kind: how its launcher is made, and the server it starts written out for ``tokenswarm plan``."""

    make: Callable[[ServerSpec, Path], Launcher]
    command: Callable[[ServerSpec, str, str | None, str], str]
    """(spec, model path, draft path, port) → a command line (process, docker), a config (embedded) or a URL."""


_KINDS = {
    "embedded": Kind(embedded_launcher, lambda spec, model, draft, port: repr(embedded_config(spec, model, draft))),
    "process": Kind(process_launcher, _process_line),
    "docker": Kind(docker_launcher, _docker_line),
    "external": Kind(external_launcher,
                     lambda spec, model, draft, port: f"{spec.url} (already running; health checks and pre-flight only)"),
}
LAUNCHERS = {kind: _KINDS[kind] for kind in LAUNCHER_KINDS}
"""Each kind a scenario may name; what each reads from a scenario is ``scenario.spec.LAUNCHER_KINDS`` (the
parser, the settings and the conditions read it without importing this stage), and a kind without an entry
here fails at import."""


def server_command(spec: ServerSpec) -> str:
    """The server a variant starts, as its kind writes it; the generated models are named, not built."""
    try:
        model, draft = models(spec, build=False)
    except ImportError:  # the embedded extras are not installed: say what the scenario says
        model, draft = spec.model, spec.draft_model
    try:
        spec = with_generated_mmproj(spec, build=False)
        return LAUNCHERS[spec.launcher].command(spec, model, draft, str(spec.port) if spec.port else FREE_PORT)
    except ScenarioError:
        raise
    except ValueError as exc:  # a flag tokenswarm sets itself, or one the embedded server refuses
        raise ScenarioError(f"server.flags: {exc}") from None


def check_launchers(specs: Iterable[ServerSpec]) -> None:
    """Before any variant starts, refuse what would fail every variant of a kind the same way.

    One line and exit 2 (``TokenswarmError``) instead of a run folder of identical ``failed_to_load``
    results (and useless ``retry_with`` retries): an external server that does not answer, bad
    ``server.docker`` options, no Docker engine,
    an image that is neither present nor pullable (pulled here, so no variant's readiness time
    includes a pull).
    """
    specs = list(specs)
    for url in dict.fromkeys(spec.url for spec in specs if spec.launcher == "external" and spec.url):
        from orchestrate.server.launchers.external import probe
        probe(url)  # an unreachable --url: one line, before a results folder is made
    docker_specs = [spec for spec in specs if spec.launcher == "docker"]
    if docker_specs:
        from orchestrate.server.launchers.docker import check_engine, docker_options
        for spec in docker_specs:
            docker_options(spec.docker)
        check_engine([spec.image for spec in docker_specs])


def make_launcher(spec: ServerSpec, log_path: Path) -> Launcher:
    try:
        kind = LAUNCHERS[spec.launcher]
    except KeyError:
        raise ScenarioError(f"server.launcher: unknown kind {spec.launcher!r}; "
                            f"available: {', '.join(LAUNCHERS)}") from None
    if LAUNCHER_KINDS[spec.launcher].starts_server and spec.host not in LOCAL_HOSTS:
        print(f"tokenswarm: warning: the server binds {spec.host}, so other machines can reach it "
              f"(server.host; the default is 127.0.0.1)", file=sys.stderr, flush=True)
    return kind.make(spec, log_path)
