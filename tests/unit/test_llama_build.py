"""orchestrate/server/llama_build.py: where the real llama-server's build is cached, and how the process
launcher finds it (the build itself runs in ``make llama-server``; the real-parts tests use it)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrate.errors import ServerError
from orchestrate.server.launchers.process import find_binary
from orchestrate.server.llama_build import VERSION, binary_path, cached_binary, main


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TOKENSWARM_CACHE", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-path"))  # no llama-server on PATH
    return tmp_path


def fake_build(cache: Path) -> Path:
    path = binary_path()
    path.parent.mkdir(parents=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_the_build_is_keyed_by_version_under_the_cache(cache: Path) -> None:
    assert binary_path() == cache / "llama-server" / VERSION / "bin" / "llama-server"
    assert binary_path("1.2.3").parent.parent.name == "1.2.3"


def test_no_build_is_none_and_check_exits_1(cache: Path) -> None:
    assert cached_binary() is None
    with pytest.raises(SystemExit) as info:
        main(["--check"])
    assert info.value.code == 1


def test_a_build_is_found_and_printed(cache: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = fake_build(cache)
    assert cached_binary() == path
    main(["--check"])
    assert capsys.readouterr().out == f"{path}\n"
    main([])  # built already: the path at once, nothing rebuilt
    assert capsys.readouterr().out.splitlines()[-1] == str(path)


def test_a_file_that_is_not_executable_is_no_build(cache: Path) -> None:
    fake_build(cache).chmod(0o644)
    assert cached_binary() is None


def test_plain_llama_server_off_path_is_the_cached_build(cache: Path) -> None:
    with pytest.raises(ServerError, match="make llama-server"):
        find_binary("llama-server")
    path = fake_build(cache)
    assert find_binary("llama-server") == str(path)
    with pytest.raises(ServerError, match="'llama-server-cuda' is not on PATH"):
        find_binary("llama-server-cuda")  # another name is never replaced
    (cache / "empty-path").mkdir()
    on_path = cache / "empty-path" / "llama-server"
    on_path.write_text("#!/bin/sh\n")
    on_path.chmod(0o755)
    assert find_binary("llama-server") == str(on_path)  # PATH first
    assert os.access(path, os.X_OK)
