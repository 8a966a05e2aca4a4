"""Shared fixtures: the generated tiny model (and its draft) and a started embedded server."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

from orchestrate.launchers.embedded import EmbeddedConfig, EmbeddedLauncher
from orchestrate.tinymodel import tiny_draft_spec, tiny_model_path


@pytest.fixture(scope="session")
def tiny_model() -> Path:
    """The cached tiny GGUF (built on first use under ``$TOKENSWARM_CACHE`` or ~/.cache)."""
    return tiny_model_path()


@pytest.fixture(scope="session")
def tiny_draft_model() -> Path:
    """The cached 1-layer draft that llama.cpp accepts for the tiny model."""
    return tiny_model_path(tiny_draft_spec())


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
