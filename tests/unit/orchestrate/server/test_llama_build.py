"""orchestrate/server/llama_build.py: a build counts once it served a real chat completion.

The check (``serves``) runs for real: a stand-in binary that dies of SIGILL after llama.cpp's last
lines (``tests/fixtures/llama-server-sigill``), and one that serves the tiny model with llama.cpp's
own server (``tokenswarm-llama-server``, the embedded build). What these tests replace is only the
13-minute compile (``compile_server``), by one that puts such a binary where cmake's would be; the
real build and its check run in ``make llama-server`` and ``tests/integration/test_real_server.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from orchestrate.server import llama_build
from orchestrate.server.llama_build import UNUSED_OPTIONS, main, serves
from orchestrate.server.llama_recipe import Recipe, cached_binary, host_cpu, recipe_for, verified_on
from tests.helpers import FIXTURES

FIXTURES = FIXTURES
SIGILL = (FIXTURES / "llama-server-sigill").read_text()
SERVES = f'#!/bin/sh\nexec "{Path(sys.executable).parent / "tokenswarm-llama-server"}" "$@"\n'
CONFIGURE_LINE = ("-- Adding CPU backend variant ggml-cpu: -msse4.2;-mf16c;-mfma;-mbmi2;-mavx;-mavx2 "
                  "GGML_SSE42;GGML_F16C;GGML_FMA;GGML_BMI2;GGML_AVX;GGML_AVX2\n")
"""ggml's configure line as build 11434 prints it (flags, then definitions)."""


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_model: Path) -> Path:
    """An empty tokenswarm cache that still has the tiny model the check serves (built once per session)."""
    monkeypatch.setenv("TOKENSWARM_CACHE", str(tmp_path / "cache"))
    (tmp_path / "cache" / "models").mkdir(parents=True)
    (tmp_path / "cache" / "models" / tiny_model.name).symlink_to(tiny_model)
    return tmp_path / "cache"


def script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


def compiles_to(text: str, monkeypatch: pytest.MonkeyPatch) -> list[Recipe]:
    """Make ``compile_server`` produce a ``bin`` folder whose ``llama-server`` is ``text``; returns its calls."""
    calls: list[Recipe] = []

    def compile_server(recipe: Recipe, work: Path, jobs: int | None, sdist: Path | None = None) -> Path:
        calls.append(recipe)
        (work / "build.log").write_text(CONFIGURE_LINE)
        return script(work / "out" / "bin" / "llama-server", text).parent

    monkeypatch.setattr(llama_build, "compile_server", compile_server)
    return calls


def this_recipe() -> Recipe:
    return recipe_for(host_cpu())


def test_a_binary_that_serves_passes_the_check(cache: Path, tmp_path: Path) -> None:
    assert serves(script(tmp_path / "llama-server", SERVES), tmp_path / "check.log") is None
    assert (tmp_path / "check.log").stat().st_size > 0  # the server's own log, kept


def test_a_binary_that_dies_of_sigill_fails_the_check_by_name(cache: Path, tmp_path: Path) -> None:
    failure = serves(script(tmp_path / "llama-server", SIGILL), tmp_path / "check.log")
    assert failure == ("the server died of an illegal instruction (SIGILL): this binary uses CPU instructions this "
                       "host cannot run; last log line: init: llama threadpool init, n_threads = 1")


def test_a_build_that_serves_is_cached_with_its_recipe_and_then_reused_unchecked(
        cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    calls = compiles_to(SERVES, monkeypatch)
    main([])
    recipe = this_recipe()
    assert capsys.readouterr().out.splitlines()[-1] == str(recipe.binary) == str(cached_binary())
    assert calls == [recipe]
    written = json.loads((recipe.folder / "recipe.json").read_text())
    assert written["cmake_options"] == list(recipe.options) and written["version"] == recipe.version
    assert written["compiler_flags"] == ["-msse4.2", "-mf16c", "-mfma", "-mbmi2", "-mavx", "-mavx2"]
    assert written["built_on"]["fingerprint"] == host_cpu().fingerprint
    assert verified_on(recipe) == [host_cpu().fingerprint]
    assert [p.name for p in recipe.folder.parent.iterdir()] == [recipe.key], "no temp folder left"

    def never(*args: Any) -> None:
        raise AssertionError("a build checked on this CPU is not checked again")
    monkeypatch.setattr(llama_build, "serves", never)
    main([])
    main(["--check"])
    assert capsys.readouterr().out.splitlines() == [str(recipe.binary)] * 2
    assert len(calls) == 1


def test_a_build_that_dies_of_sigill_is_one_line_and_not_cached(
        cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    compiles_to(SIGILL, monkeypatch)
    with pytest.raises(SystemExit) as info:
        main([])
    message = str(info.value.code)
    assert "\n" not in message
    assert message.startswith("llama_build: the new build does not serve on this host, so it is not cached: "
                              "the server died of an illegal instruction (SIGILL)")
    assert cached_binary() is None
    kept = cache / "llama-server" / f"{this_recipe().key}.failed-check.log"
    assert f"its server log: {kept}" in message and "threadpool init" in kept.read_text()
    assert sorted(p.name for p in (cache / "llama-server").iterdir()) == [kept.name]
    with pytest.raises(SystemExit) as check:
        main(["--check"])
    assert check.value.code == 1


def test_a_cached_build_never_checked_on_this_cpu_is_checked_and_rebuilt_when_it_fails(
        cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    recipe = this_recipe()
    script(recipe.binary, SIGILL)  # as copied from a host with more instruction sets
    calls = compiles_to(SERVES, monkeypatch)
    main([])
    captured = capsys.readouterr()
    assert captured.out.splitlines()[-1] == str(recipe.binary)
    assert (f"llama_build: the cached build {recipe.binary} does not serve on this host (the server died of an "
            f"illegal instruction (SIGILL)") in captured.err
    assert calls == [recipe] and recipe.binary.read_text() == SERVES
    assert verified_on(recipe) == [host_cpu().fingerprint]


def test_a_cached_build_checked_on_another_cpu_is_checked_here_once(
        cache: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    recipe = this_recipe()
    script(recipe.binary, SERVES)
    (recipe.folder / "verified.json").write_text(json.dumps({"hosts": [{"fingerprint": "another-cpu"}]}))
    calls = compiles_to(SIGILL, monkeypatch)
    main([])
    assert capsys.readouterr().out.splitlines()[-1] == str(recipe.binary)
    assert calls == [], "it served: nothing is built"
    assert verified_on(recipe) == ["another-cpu", host_cpu().fingerprint]


def test_an_option_cmake_does_not_know_is_found_in_its_own_words(tmp_path: Path) -> None:
    """cmake's real warning for a -D option the project never reads (a misspelt ggml option)."""
    (tmp_path / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.14)\nproject(p NONE)\n")
    proc = subprocess.run(["cmake", "-S", str(tmp_path), "-B", str(tmp_path / "b"), "-DGGML_AVX521=ON",
                           "-DGGML_NOPE=OFF"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    unused = UNUSED_OPTIONS.search(proc.stdout + proc.stderr)
    assert unused is not None and unused.group(1).split() == ["GGML_AVX521", "GGML_NOPE"]
