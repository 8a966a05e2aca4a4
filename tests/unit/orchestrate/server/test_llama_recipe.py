"""orchestrate/server/llama_recipe.py: the build recipe read off this host's CPU (never AMX, never
``-march=native`` on x86), the cache keyed by it, and the CPUs a build was checked on."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrate.errors import ServerError
from orchestrate.server.launchers.process import find_binary
from orchestrate.server.llama_recipe import (
    BASE_OPTIONS,
    VERSION,
    HostCpu,
    cached_binary,
    host_cpu,
    note_verified,
    recipe_for,
    verified_on,
)

SAPPHIRE_RAPIDS = frozenset(
    "fpu sse4_2 avx f16c fma bmi2 avx2 avx_vnni avx512f avx512cd avx512vl avx512dq avx512bw avx512vbmi "
    "avx512_vnni avx512_bf16 avx512_fp16 amx_tile amx_int8 amx_bf16".split())
"""The flags of the issue's Xeon: it advertises AMX, which a process there may not run."""
HASWELL = frozenset("fpu sse4_2 avx f16c fma bmi2 avx2".split())


def xeon() -> HostCpu:
    return HostCpu("x86_64", "Intel(R) Xeon(R) Platinum 8480+", SAPPHIRE_RAPIDS)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("TOKENSWARM_CACHE", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "empty-path"))  # no llama-server on PATH
    return tmp_path


def options_of(cpu: HostCpu) -> dict[str, str]:
    options = recipe_for(cpu).options
    assert options[:len(BASE_OPTIONS)] == BASE_OPTIONS
    return dict(option[2:].split("=", 1) for option in options[len(BASE_OPTIONS):])


def test_an_amx_host_gets_its_avx512_sets_and_never_amx_or_native() -> None:
    options = options_of(xeon())
    assert options["GGML_NATIVE"] == "OFF"
    assert {options[name] for name in ("GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16")} == {"OFF"}
    assert {options[name] for name in ("GGML_AVX2", "GGML_AVX512", "GGML_AVX512_VBMI", "GGML_AVX512_VNNI",
                                       "GGML_AVX512_BF16", "GGML_AVX_VNNI", "GGML_FMA", "GGML_F16C")} == {"ON"}


def test_an_avx2_host_gets_no_avx512_and_its_own_cache_folder() -> None:
    haswell = HostCpu("x86_64", "Intel(R) Xeon(R) CPU E5-2680 v3", HASWELL)
    options = options_of(haswell)
    assert options["GGML_AVX2"] == options["GGML_FMA"] == "ON"
    assert options["GGML_AVX512"] == options["GGML_AVX512_VNNI"] == options["GGML_AVX_VNNI"] == "OFF"
    assert recipe_for(haswell).key != recipe_for(xeon()).key
    same_sets = HostCpu("x86_64", "another CPU model", HASWELL | {"hypervisor"})
    assert recipe_for(same_sets).key == recipe_for(haswell).key, "the key is what the build depends on"


def test_a_cuda_build_is_the_cpu_recipe_plus_cuda_in_its_own_cache_folder() -> None:
    cpu, cuda = recipe_for(xeon()), recipe_for(xeon(), backend="cuda")
    assert cuda.options == cpu.options + ("-DGGML_CUDA=ON",) and cuda.key != cpu.key


def test_avx512_needs_every_subset_ggml_compiles_for() -> None:
    partial = HostCpu("x86_64", "x", HASWELL | {"avx512f", "avx512_vnni"})  # no avx512bw, vl, dq, cd
    assert options_of(partial)["GGML_AVX512"] == "OFF"


def test_other_architectures_stay_native_keyed_by_their_cpu() -> None:
    arm = HostCpu("aarch64", "Neoverse-V2", frozenset("fp asimd sve sve2".split()))
    assert options_of(arm) == {"GGML_NATIVE": "ON"}
    other = HostCpu("aarch64", "Neoverse-N1", frozenset("fp asimd".split()))
    assert recipe_for(arm).key != recipe_for(other).key


def test_the_host_cpu_is_read_from_cpuinfo(tmp_path: Path) -> None:
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: AMD EPYC 9R14\nflags\t\t: fpu avx2 avx512f\n\n"
                       "processor\t: 1\nmodel name\t: other\nflags\t\t: fpu\n")
    cpu = host_cpu(cpuinfo)
    assert (cpu.model, cpu.flags) == ("AMD EPYC 9R14", frozenset({"fpu", "avx2", "avx512f"}))
    assert host_cpu(tmp_path / "absent").flags == frozenset()
    assert len(cpu.fingerprint) == 16 and cpu.fingerprint != host_cpu(tmp_path / "absent").fingerprint


def test_the_cache_is_keyed_by_version_and_options_so_the_old_recipes_build_is_not_reused(cache: Path) -> None:
    old = cache / "llama-server" / VERSION / "bin" / "llama-server"  # where the -march=native recipe put it
    old.parent.mkdir(parents=True)
    old.write_text("#!/bin/sh\n")
    old.chmod(0o755)
    assert cached_binary() is None
    recipe = recipe_for(host_cpu())
    assert recipe.folder == cache / "llama-server" / recipe.key and recipe.key.startswith(f"{VERSION}-")
    assert recipe_for(host_cpu(), "1.2.3").key.startswith("1.2.3-")
    fake_build(recipe.binary)
    assert cached_binary() == recipe.binary
    recipe.binary.chmod(0o644)
    assert cached_binary() is None, "a file that is not executable is no build"


def test_the_cpus_a_build_served_on_are_kept(cache: Path) -> None:
    recipe = recipe_for(xeon())
    assert verified_on(recipe) == []
    recipe.folder.mkdir(parents=True)
    note_verified(recipe.folder, xeon())
    note_verified(recipe.folder, xeon())  # once per CPU
    other = HostCpu("x86_64", "Intel(R) Xeon(R) Gold 6430", SAPPHIRE_RAPIDS)
    note_verified(recipe.folder, other)
    assert verified_on(recipe) == [xeon().fingerprint, other.fingerprint]
    (recipe.folder / "verified.json").write_text("{not json")
    assert verified_on(recipe) == []


def fake_build(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_plain_llama_server_off_path_is_the_cached_build(cache: Path) -> None:
    with pytest.raises(ServerError, match="make llama-server"):
        find_binary("llama-server")
    path = fake_build(recipe_for(host_cpu()).binary)
    assert find_binary("llama-server") == str(path)
    with pytest.raises(ServerError, match="'llama-server-cuda' is not on PATH"):
        find_binary("llama-server-cuda")  # another name is never replaced
    on_path = fake_build(cache / "empty-path" / "llama-server")
    assert find_binary("llama-server") == str(on_path)  # PATH first
    assert os.access(path, os.X_OK)
