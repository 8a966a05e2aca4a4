"""orchestrate/server/packaged_models.py: a model name → the GGUF its package assembles, once, in the cache."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from orchestrate.errors import ScenarioError
from orchestrate.server import packaged_models
from orchestrate.server.launchers import resolve_model
from orchestrate.server.packaged_models import PackagedModel, packaged_model_path


@pytest.fixture
def fake_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """``fake-model``: a package whose ``assemble`` writes a small file and counts its calls."""
    monkeypatch.setenv("TOKENSWARM_CACHE", str(tmp_path))
    calls: list[Path] = []

    def assemble(path: Path, overwrite: bool = False) -> Path:
        assert overwrite  # the cache's temp file exists already (empty)
        calls.append(Path(path))
        Path(path).write_bytes(b"GGUF")
        return Path(path)

    monkeypatch.setitem(sys.modules, "fake_model_pkg", types.SimpleNamespace(assemble=assemble))
    monkeypatch.setitem(packaged_models.PACKAGED_MODELS, "fake-model",
                        PackagedModel("fake_model_pkg", "fake-model-dist", "fake.gguf", "a test model"))
    return calls


def test_assembled_once_then_reused(fake_package: list[Path], tmp_path: Path) -> None:
    path = packaged_model_path("fake-model")
    assert path == tmp_path / "models" / "fake.gguf" and path.read_bytes() == b"GGUF"
    assert resolve_model("fake-model") == str(path)  # every launcher resolves names this way
    assert len(fake_package) == 1 and fake_package[0] != path  # written aside, then renamed


def test_plan_shows_the_path_without_assembling(fake_package: list[Path], tmp_path: Path) -> None:
    assert resolve_model("fake-model", build=False) == str(tmp_path / "models" / "fake.gguf")
    assert fake_package == [] and not (tmp_path / "models" / "fake.gguf").exists()


def test_a_missing_package_is_one_line_naming_the_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKENSWARM_CACHE", str(tmp_path))
    monkeypatch.setitem(packaged_models.PACKAGED_MODELS, "absent",
                        PackagedModel("no_such_module_here", "no-such-dist", "absent.gguf", "missing"))
    with pytest.raises(ScenarioError, match=r"^server\.model: absent needs the package no-such-dist; "
                                            r"pip install no-such-dist"):
        packaged_model_path("absent")
