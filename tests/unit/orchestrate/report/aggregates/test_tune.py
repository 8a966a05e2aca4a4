"""orchestrate/report/aggregates/tune.py: the pieces of a tune's answer that need no run: the command line, the
frontier, the noise between two capacities, and a failure's standing from its summary."""

from __future__ import annotations

from pathlib import Path

from orchestrate.report.aggregates.tune import command_line, frontier, standing, within_noise
from orchestrate.report.schema.server import Memory, Server
from orchestrate.report.schema.summary import Summary
from orchestrate.results import VariantPaths
from orchestrate.scenario.spec import Search, Tune

TUNE = Tune((("parallel", ("2", "4")),), {"parallel-2": (0,), "parallel-4": (1,)}, max_memory_gib=1.0)


def test_the_command_line_is_llama_servers_own() -> None:
    settings = {"server.launcher": "process", "server.model": "/models/gemma 3.gguf", "server.draft_model": None,
                "server.flags.parallel": 8, "server.flags.flash-attn": "on", "server.flags.cont-batching": True,
                "server.flags.ubatch-size": 256, "load.users": 8}
    assert command_line(settings) == ("llama-server --model '/models/gemma 3.gguf' --parallel 8 --flash-attn on "
                                      "--cont-batching --ubatch-size 256")
    assert "--model-draft d.gguf" in command_line({**settings, "server.draft_model": "d.gguf"})
    assert command_line(settings, "/cache/gemma.gguf").startswith("llama-server --model /cache/gemma.gguf --parallel")


def test_the_frontier_keeps_what_nothing_beats_on_both() -> None:
    points = {"a": (8.0, 1.0), "b": (12.0, 2.0), "c": (10.0, 3.0), "d": (12.0, 2.5), "e": (4.0, 0.5)}
    assert frontier(points) == ("e", "a", "b")


def test_two_capacities_within_the_searchs_resolution() -> None:
    assert within_noise(Search("users", 1, 64), 8, 7) and not within_noise(Search("users", 1, 64), 8, 6)
    assert within_noise(Search("users", 1, 64), 40, 38) and not within_noise(Search("users", 1, 64), 40, 37)
    assert within_noise(Search("rate", 1, 64), 10.0, 9.6) and not within_noise(Search("rate", 1, 64), 10.0, 9.4)


def test_a_failure_and_a_constraint_are_memory_failures_and_a_crash_is_not(tmp_path: Path) -> None:
    paths = VariantPaths(tmp_path)
    oom = Summary(status="failed_to_load", server=Server(cause="ggml_backend_cpu_buffer_type_alloc_buffer: failed to "
                                                                 "allocate buffer of size 1073741824: out of memory"))
    found = standing(oom, paths, TUNE)
    assert found.out_of_memory and found.value is None and found.why and found.why.startswith("failed to load: ")
    crash = standing(Summary(status="crashed", server=Server(cause="the server crashed (SIGSEGV)")), paths, TUNE)
    assert not crash.out_of_memory and crash.why == "crashed: the server crashed (SIGSEGV)"
    big = standing(Summary(status="completed", memory=Memory(peak_bytes=3 * 2**30)), paths, TUNE)
    assert big.out_of_memory and big.why == "peak memory 3.00 GiB, over the constraint's 1 GiB"
    none = standing(Summary(status="completed", memory=Memory(peak_bytes=2**29)), paths, TUNE)
    assert not none.out_of_memory and none.value is None and none.why == "no probe passed"
