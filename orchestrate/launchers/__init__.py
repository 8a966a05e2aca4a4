"""Server launchers: one small interface (``base.Launcher``), chosen by kind in ``LAUNCHERS``.

``make_launcher`` turns a scenario's ``ServerSpec`` into a launcher; the flag mapping of each kind
lives with its launcher.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from orchestrate.errors import ScenarioError
from orchestrate.launchers.base import Launcher
from orchestrate.scenario import ServerSpec

EMBEDDED_FLAGS = {"parallel": "parallel", "np": "parallel", "ctx-size": "ctx_size", "c": "ctx_size",
                  "flash-attn": "flash_attn", "fa": "flash_attn", "threads": "threads", "t": "threads",
                  "spec-draft-n-max": "draft_n_max", "draft-max": "draft_n_max", "draft": "draft_n_max",
                  "alias": "alias", "metrics": "metrics", "verbosity": "verbosity"}
"""llama-server long (and short) flag names the embedded server understands → ``EmbeddedConfig``."""


def resolve_model(name: str) -> str:
    """``tiny``/``tiny-draft`` → the generated GGUF (built once, cached); anything else is a path."""
    if name in ("tiny", "tiny-draft"):
        from orchestrate.tinymodel import TinyModelSpec, tiny_draft_spec, tiny_model_path
        return str(tiny_model_path(TinyModelSpec() if name == "tiny" else tiny_draft_spec()))
    return name


def _flag_value(key: str, value: Any) -> Any:
    if key == "flash_attn" and isinstance(value, bool):
        return "on" if value else "off"  # YAML 1.1 reads a bare `off` as false
    return value


def embedded_launcher(spec: ServerSpec, log_path: Path) -> Launcher:
    from orchestrate.launchers.embedded import EmbeddedConfig, EmbeddedLauncher
    kwargs: dict[str, Any] = {}
    for flag, value in spec.flags.items():
        if flag not in EMBEDDED_FLAGS:
            raise ScenarioError(f"server.flags.{flag}: the embedded server does not support this flag; "
                                f"supported: {', '.join(sorted(EMBEDDED_FLAGS))}")
        kwargs[EMBEDDED_FLAGS[flag]] = _flag_value(EMBEDDED_FLAGS[flag], value)
    if spec.draft_model:
        kwargs["draft_model_path"] = resolve_model(spec.draft_model)
    try:
        config = EmbeddedConfig(model_path=resolve_model(spec.model), **kwargs)
    except (TypeError, ValueError) as exc:
        raise ScenarioError(f"server.flags: {exc}") from None
    return EmbeddedLauncher(config, log_path, start_timeout_s=spec.ready_timeout_s)


def external_launcher(spec: ServerSpec, log_path: Path) -> Launcher:
    from orchestrate.launchers.external import ExternalLauncher
    assert spec.url, "validated by scenario.py"
    return ExternalLauncher(spec.url, log_path)


LAUNCHERS: dict[str, Callable[[ServerSpec, Path], Launcher]] = {
    "embedded": embedded_launcher,
    "external": external_launcher,
}


def make_launcher(spec: ServerSpec, log_path: Path) -> Launcher:
    try:
        factory = LAUNCHERS[spec.launcher]
    except KeyError:
        raise ScenarioError(f"server.launcher: unknown kind {spec.launcher!r}; "
                            f"available: {', '.join(LAUNCHERS)}") from None
    return factory(spec, log_path)
