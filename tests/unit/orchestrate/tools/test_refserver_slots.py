"""The reference server as a llama-server with a cost per slot: a stream's gap grows with the streams holding
slots when it starts (``slot_cost_ms``), and slots' memory over a limit stops it before it listens with
llama.cpp's out-of-memory line, which ``diagnose`` names."""

from __future__ import annotations

import asyncio
import csv
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest

from orchestrate.server.diagnose import diagnose
from orchestrate.tools.refserver import RefServer
from orchestrate.tools.refserver_timing import SlotMemoryError, Timing, due_times
from orchestrate.tools.refserver_wire import HttpConnection
from tests.fixtures.collecting_transport import Transport


def request(rid: str, max_tokens: int) -> bytes:
    body = json.dumps({"messages": [{"role": "user", "content": "hi there"}], "stream": True,
                       "max_tokens": max_tokens}).encode()
    return (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nX-Request-Id: %s\r\nContent-Length: %d\r\n\r\n%s"
            % (rid.encode(), len(body), body))


def serve(timing: Timing, truth: Path, rids: list[str], max_tokens: int, wait_s: float) -> list[Transport]:
    """The requests ``rids`` arrive together, in order; the server runs for ``wait_s``."""
    server = RefServer(timing, truth_file=str(truth))

    async def burst() -> list[Transport]:
        server.loop = asyncio.get_running_loop()
        transports = []
        for rid in rids:
            conn, transport = HttpConnection(server), Transport()
            conn.connection_made(transport)
            conn.data_received(request(rid, max_tokens))
            transports.append(transport)
        await asyncio.sleep(wait_s)
        return transports

    transports = asyncio.run(burst())
    server.close()
    return transports


def scheduled_gaps_ms(truth: Path) -> dict[str, set[float]]:
    """Each request's gaps between content chunks as scheduled (ms, rounded to 0.1)."""
    due: dict[str, list[float]] = defaultdict(list)
    for row in csv.DictReader(truth.open()):
        if row["kind"] == "content":
            due[row["request_id"]].append(float(row["scheduled_ts"]))
    return {rid: {round((b - a) * 1000.0, 1) for a, b in zip(ts, ts[1:])} for rid, ts in due.items()}


def predicted_ms(transport: Transport) -> float:
    usage = [line for line in bytes(transport.data).split(b"\r\n") if b'"timings"' in line][0]
    return float(json.loads(usage[len(b"data: "):])["timings"]["predicted_ms"])


@pytest.mark.parametrize("queue", [True, False])
def test_a_streams_gap_grows_with_the_streams_holding_slots_when_it_starts(tmp_path: Path, queue: bool) -> None:
    """r0 starts alone (gap itl), r1 beside it (itl + C); with a queue of 2 slots r2 waits and starts beside
    r1 when r0 ends (itl + C); without one it starts at once beside both (itl + 2C)."""
    truth = tmp_path / "truth.csv"
    timing = Timing(ttft_ms=1.0, itl_ms=2.0, slot_cost_ms=3.0, slots=2, queue=queue)
    transports = serve(timing, truth, ["r0", "r1", "r2"], 5, 0.3)
    assert all(t.data.endswith(b"0\r\n\r\n") for t in transports)
    assert scheduled_gaps_ms(truth) == {"r0": {2.0}, "r1": {5.0}, "r2": {5.0 if queue else 8.0}}
    # llama.cpp's own timings say the same: 4 gaps from the first content chunk to the last
    assert [predicted_ms(t) for t in transports] == pytest.approx([8.0, 20.0, 20.0 if queue else 32.0])


def test_no_slot_cost_keeps_the_asked_gap(tmp_path: Path) -> None:
    truth = tmp_path / "truth.csv"
    serve(Timing(ttft_ms=1.0, itl_ms=2.0, slots=2, queue=True), truth, ["r0", "r1", "r2"], 4, 0.2)
    assert scheduled_gaps_ms(truth) == {"r0": {2.0}, "r1": {2.0}, "r2": {2.0}}


def test_due_times_never_go_back() -> None:
    assert due_times(10.0, 5.0, [0.0, 0.0, 0.0]) == pytest.approx([0.010, 0.015, 0.020])
    assert due_times(10.0, 5.0, [0.0, -0.008, 0.0]) == pytest.approx([0.010, 0.010, 0.020])


def test_slot_memory_over_the_limit_never_listens_and_diagnoses_as_out_of_memory() -> None:
    server = RefServer(Timing(slots=4, slot_memory_mib=100.0, memory_limit_mib=399.0))
    with pytest.raises(SlotMemoryError) as raised:
        asyncio.run(server.start())
    line = str(raised.value)
    assert line.startswith(f"ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size "
                           f"{400 << 20}: out of memory")
    assert "400 MiB > memory limit 399 MiB" in line
    assert server.slot_memory == [] and server.loop is None  # nothing allocated, never listened
    cause, hint = diagnose([line], 1)
    assert cause == line and hint is not None and "out of memory" in hint


async def started(server: RefServer) -> RefServer:
    await server.start()
    server.close()
    return server


def test_slot_memory_within_the_limit_is_allocated_per_slot() -> None:
    server = asyncio.run(started(RefServer(Timing(slots=3, slot_memory_mib=0.5, memory_limit_mib=1.5))))
    assert [len(block) for block in server.slot_memory] == [1 << 19] * 3
    assert all(block[0] == block[-1] == 1 for block in server.slot_memory)  # written, not just reserved


@pytest.mark.parametrize("bad", [{"slot_cost_ms": -1.0}, {"slot_memory_mib": -1.0}, {"memory_limit_mib": -1.0}])
def test_timing_refuses_negative_costs(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        Timing(**bad)
