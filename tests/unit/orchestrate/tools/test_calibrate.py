"""orchestrate/tools/calibrate.py: the arithmetic of a calibration, not its runs.

The client's timing errors against the reference server's truth, the capacity under each p99 limit,
the CPU between two instants from samples, the truth file's reading. ``run_step`` runs with the
reference server, the Locust process and the CPU sampler replaced (they would start processes); the
records and the truth they would leave are written by hand, so every expected error is known.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import pytest

from locustfiles.resultfiles import RECORDS_FILE
from orchestrate.tools import calibrate
from orchestrate.tools.calibrate import THRESHOLDS_MS, CpuSampler, Step, capacity, cores, pin, read_truth, run_step

TRUTH_HEADER = "request_id,index,kind,ts,scheduled_ts\n"


def step(chunks_per_s: float, p99: float | None, completed: int = 10, errors: int = 0,
         cpu_us: float | None = None, chunks: int = 100) -> Step:
    errs = None if p99 is None else {"p50": 0.1, "p99": p99}
    return Step(8, 5.0, 100, 10, completed=completed, errors=errors, chunks=chunks, chunks_per_s=chunks_per_s,
                cpu_us_per_chunk=cpu_us, ttft_err_ms=errs, chunk_err_ms=errs)


def test_p99_is_the_worse_of_ttft_and_chunk_errors() -> None:
    s = Step(1, 1.0, 10, 1, ttft_err_ms={"p99": 0.4}, chunk_err_ms={"p99": 2.5}, tpot_err_ms={"p99": 9.0})
    assert s.p99_ms == 2.5  # TPOT error is not part of it
    assert Step(1, 1.0, 10, 1, ttft_err_ms={"p99": 0.4}).p99_ms == 0.4
    assert Step(1, 1.0, 10, 1).p99_ms == math.inf  # nothing measured never passes a limit


def test_capacity_is_the_fastest_clean_step_under_each_limit() -> None:
    """A step with errors, or none completed, does not count however fast it was."""
    steps = [step(1000, 0.3, cpu_us=20.0, chunks=100), step(4000, 0.9, cpu_us=40.0, chunks=300),
             step(9000, 3.0), step(20000, 0.2, errors=1), step(30000, 0.1, completed=0), step(50000, 7.0)]
    cap = capacity(steps)
    assert cap["chunks_per_s_p99_under_1ms"] == 4000
    assert cap["chunks_per_s_p99_under_5ms"] == 9000
    assert [f"chunks_per_s_p99_under_{t:g}ms" for t in THRESHOLDS_MS] == [k for k in cap if k.endswith("ms")]
    assert cap["cpu_us_per_chunk"] == round((20.0 * 100 + 40.0 * 300) / 400, 2) == 35.0  # weighted by chunks
    assert cap["chunks_per_s_at_full_core_estimate"] == round(1e6 / 35.0)
    assert cap["max_chunks_per_s_seen"] == 50000


def test_capacity_with_nothing_within_the_limits() -> None:
    cap = capacity([step(500, 12.0)])
    assert cap == {"chunks_per_s_p99_under_1ms": 0.0, "chunks_per_s_p99_under_5ms": 0.0, "cpu_us_per_chunk": None,
                   "max_chunks_per_s_seen": 500}
    assert capacity([])["max_chunks_per_s_seen"] == 0.0


def test_cpu_between_interpolates_inside_the_samples() -> None:
    sampler = CpuSampler(os.getpid())  # not started: the samples are set by hand
    sampler.samples = [(10.0, 1.0), (11.0, 1.5), (12.0, 3.5)]
    assert sampler.cpu_between(10.5, 11.5) == pytest.approx(2.5 - 1.25)  # across a sample: each end interpolated
    assert sampler.cpu_between(10.0, 12.0) == pytest.approx(2.5)
    assert sampler.cpu_between(9.0, 11.0) is None  # before the first sample: unknown, not zero
    assert sampler.cpu_between(10.0, 12.5) is None


def test_read_truth_keeps_content_chunks_and_their_lateness(tmp_path: Path) -> None:
    truth = tmp_path / "truth.csv"
    truth.write_text(TRUTH_HEADER + "p0,-1,arrive,99.0,99.0\np0,0,role,100.0,100.0\np0,1,content,100.002,100.0\n"
                     "p1,1,content,101.0,101.001\np0,2,content,100.02,100.02\np0,3,end,100.03,100.03\n")
    chunks, late = read_truth(truth)
    assert dict(chunks) == {"p0": [100.002, 100.02], "p1": [101.0]}
    assert late == pytest.approx([2.0, -1.0, 0.0])  # ms, content only, in file order


def test_cores_pins_server_and_client_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {7, 3, 5})
    assert cores() == (3, 5)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {2})
    assert cores() == (None, None)  # one core: no pinning rather than both on it
    assert pin(None) is None and callable(pin(3))


# --- run_step's comparison, with its processes replaced -------------------------------------------

SEND = 1000.0
RECORDS = [
    # p0: TTFT 0.5 ms late, chunks 0.5/0.2/0.1 ms late, TPOT 0.3 ms long
    {"request_id": "p0", "prompt_index": 0, "status": "ok", "send_ts": SEND, "ttft_ms": 50.5,
     "chunk_offsets_ms": [50.5, 70.2, 90.1], "tpot_ms": 20.3},
    # found by its [req:p1] marker, not its own id: TTFT exact, chunks 0 and 1 ms late, TPOT 1 ms long
    {"request_id": "x-1", "prompt_index": 1, "status": "ok", "send_ts": SEND + 0.01, "ttft_ms": 50.0,
     "chunk_offsets_ms": [50.0, 71.0], "tpot_ms": 21.0},
    {"request_id": "p2", "prompt_index": 2, "status": "error", "send_ts": SEND, "ttft_ms": None,
     "chunk_offsets_ms": [], "tpot_ms": None},
    {"request_id": "p3", "prompt_index": 3, "status": "ok", "send_ts": SEND, "ttft_ms": 1.0,  # no truth: skipped
     "chunk_offsets_ms": [1.0], "tpot_ms": None},
]
TRUTH = {"p0": [SEND + 0.05, SEND + 0.07, SEND + 0.09], "p1": [SEND + 0.06, SEND + 0.08]}


def test_run_step_compares_the_client_with_the_truth(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: dict[str, Any] = {}

    def start_server(truth: Path, itl_ms: float, output_tokens: int, core: int | None, log: Path,
                     ttft_ms: float = 50.0) -> tuple[object, str]:
        seen["server"] = (itl_ms, output_tokens)
        truth.write_text(TRUTH_HEADER + "".join(f"{rid},{i},content,{ts!r},{ts - 0.001!r}\n"
                                                for rid, times in TRUTH.items() for i, ts in enumerate(times)))
        return object(), "http://127.0.0.1:1"

    class Client:
        pid = os.getpid()

        def __init__(self, cmd: list[str], **_kw: Any) -> None:
            seen["cmd"] = cmd
            (tmp_path / "u2-gap20" / RECORDS_FILE).write_text("".join(json.dumps(r) + "\n" for r in RECORDS))

        def wait(self, timeout: float | None = None) -> int:
            return 0

    class Sampler:
        def __init__(self, pid: int) -> None:
            pass

        def start(self) -> None:
            pass

        def join(self, timeout: float | None = None) -> None:
            pass

        def cpu_between(self, t0: float, t1: float) -> float:
            seen["window"] = (t0, t1)
            return 0.0045

    monkeypatch.setattr(calibrate, "start_server", start_server)
    monkeypatch.setattr(calibrate, "stop_server", lambda proc: None)
    monkeypatch.setattr(calibrate.subprocess, "Popen", Client)
    monkeypatch.setattr(calibrate, "CpuSampler", Sampler)

    s = run_step(tmp_path, users=2, itl_ms=20.0, rounds=2, server_core=None, client_core=None)
    assert seen["server"] == (20.0, 50)  # each request streams about 1 s
    assert seen["cmd"][-5:] == ["--run-time", "90s", "--loglevel", "WARNING", "--only-summary"]
    prompts = (tmp_path / "u2-gap20" / "prompts.jsonl").read_text().splitlines()
    assert len(prompts) == s.prompts == 4 and "[req:p3]" in prompts[3]
    assert (s.completed, s.errors, s.chunks) == (2, 1, 5)
    assert seen["window"] == (SEND, pytest.approx(SEND + 0.09))  # first send to the last true chunk
    assert s.duration_s == 0.09 and s.chunks_per_s == round(5 / 0.09, 1)
    assert s.cpu_us_per_chunk == 900.0 and s.cpu_pct == 5.0
    assert s.ttft_err_ms is not None and s.chunk_err_ms is not None and s.tpot_err_ms is not None
    assert (s.ttft_err_ms["p99"], s.ttft_err_ms["min"], s.ttft_err_ms["n"]) == (0.5, 0.0, 2)
    assert (s.chunk_err_ms["max"], s.chunk_err_ms["min"], s.chunk_err_ms["n"]) == (1.0, 0.0, 5)
    assert s.chunk_err_ms["mean"] == pytest.approx(0.36)
    assert (s.tpot_err_ms["min"], s.tpot_err_ms["max"]) == (0.3, 1.0)
    assert s.server_send_err_ms is not None and s.server_send_err_ms["mean"] == pytest.approx(1.0)
    assert s.server_send_err_ms["n"] == 5
    assert s.p99_ms == 1.0
