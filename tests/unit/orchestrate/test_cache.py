"""orchestrate/cache.py: where generated artefacts live, and a build that never leaves a half-written file."""

from __future__ import annotations

import stat
import threading
from pathlib import Path

import pytest

from orchestrate.cache import cache_dir, cached


def test_cache_dir_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``$TOKENSWARM_CACHE`` replaces the home default, one folder per kind."""
    monkeypatch.setenv("TOKENSWARM_CACHE", str(tmp_path / "c"))
    assert cache_dir("models") == tmp_path / "c" / "models"
    assert cache_dir("datasets") == tmp_path / "c" / "datasets"


@pytest.mark.parametrize("env", [None, ""])
def test_cache_dir_default_under_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, env: str | None) -> None:
    """Unset or empty, the cache is ``~/.cache/tokenswarm/<kind>`` (an empty value is not the cwd)."""
    monkeypatch.setenv("HOME", str(tmp_path))
    if env is None:
        monkeypatch.delenv("TOKENSWARM_CACHE", raising=False)
    else:
        monkeypatch.setenv("TOKENSWARM_CACHE", env)
    assert cache_dir("secrets") == tmp_path / ".cache" / "tokenswarm" / "secrets"


def test_builds_once_into_new_folders_then_reuses(tmp_path: Path) -> None:
    """The first call makes the folders and builds; a later one returns the file without building."""
    target = tmp_path / "a" / "b" / "model.gguf"
    calls: list[Path] = []

    def build(tmp: Path) -> None:
        calls.append(tmp)
        tmp.write_text("built")

    assert cached(target, build) == target
    assert target.read_text() == "built" and len(calls) == 1
    assert cached(target, build) == target
    assert len(calls) == 1
    assert sorted(p.name for p in target.parent.iterdir()) == ["model.gguf"]  # no temp file left


def test_build_writes_a_temp_file_beside_the_target(tmp_path: Path) -> None:
    """While it builds, the target does not exist yet: a concurrent reader sees no file, not part of one."""
    target = tmp_path / "data.json"
    seen: dict[str, object] = {}

    def build(tmp: Path) -> None:
        tmp.write_text('{"half": ')
        seen.update(tmp=tmp, target_exists=target.exists())
        tmp.write_text('{"whole": 1}')

    cached(target, build)
    tmp = seen["tmp"]
    assert isinstance(tmp, Path) and tmp != target
    assert tmp.parent == target.parent  # same file system: the rename is atomic
    assert tmp.name.startswith("data.") and tmp.name.endswith(".tmp")
    assert seen["target_exists"] is False
    assert target.read_text() == '{"whole": 1}'


def test_file_is_private_to_the_user(tmp_path: Path) -> None:
    """The join token is cached this way, so the file must keep mkstemp's mode 0600."""
    target = cached(tmp_path / "join-token", lambda tmp: tmp.write_text("secret\n"))
    assert stat.S_IMODE(target.stat().st_mode) == 0o600


def test_failed_build_leaves_nothing_and_the_next_call_rebuilds(tmp_path: Path) -> None:
    """A build that raises leaves neither the target nor its temp file, so the next run tries again."""
    target = tmp_path / "x.bin"

    def broken(tmp: Path) -> None:
        tmp.write_text("partial")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        cached(target, broken)
    assert list(tmp_path.iterdir()) == []
    assert cached(target, lambda tmp: tmp.write_text("ok")).read_text() == "ok"


def test_a_directory_at_the_path_is_not_a_cached_file(tmp_path: Path) -> None:
    """Only a file counts as built; a folder of that name makes the build fail, not be returned as done."""
    target = tmp_path / "thing"
    target.mkdir()
    with pytest.raises(OSError):
        cached(target, lambda tmp: tmp.write_text("x"))
    assert [p.name for p in tmp_path.iterdir()] == ["thing"]


def test_concurrent_builders_all_get_the_whole_file(tmp_path: Path) -> None:
    """Two runs building the same artefact at once: each gets the path, the file is whole, no temp remains."""
    target = tmp_path / "shared.txt"
    start = threading.Barrier(4)
    results: list[Path] = []

    def build(tmp: Path) -> None:
        tmp.write_text("a" * 1000)
        tmp.write_text("a" * 100_000)

    def worker() -> None:
        start.wait()
        results.append(cached(target, build))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [target] * 4
    assert target.read_text() == "a" * 100_000
    assert [p.name for p in tmp_path.iterdir()] == ["shared.txt"]
