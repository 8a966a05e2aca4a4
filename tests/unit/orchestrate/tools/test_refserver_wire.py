"""The reference server's arrival stamp: requests read in one loop pass are all stamped before any is
built, so the truth of a burst's last request does not carry the server's work on the others."""

from __future__ import annotations

import asyncio
import csv
import json
from pathlib import Path

from orchestrate.tools.refserver import RefServer
from orchestrate.tools.refserver_timing import Timing
from orchestrate.tools.refserver_wire import HttpConnection
from tests.fixtures.collecting_transport import Transport


def request(rid: str) -> bytes:
    body = json.dumps({"messages": [{"role": "user", "content": "hi " * 200}], "stream": True}).encode()
    return (b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"X-Request-Id: %s\r\nContent-Length: %d\r\n\r\n%s" % (rid.encode(), len(body), body))


def test_a_burst_is_stamped_on_arrival_before_any_request_is_built(tmp_path: Path) -> None:
    truth = tmp_path / "truth.csv"
    server = RefServer(Timing(ttft_ms=5, itl_ms=1, output_tokens=50), truth_file=str(truth))

    async def burst() -> list[Transport]:
        server.loop = asyncio.get_running_loop()
        transports = []
        for i in range(32):  # one poll pass: every request's bytes read before the loop turns
            conn, transport = HttpConnection(server), Transport()
            conn.connection_made(transport)
            conn.data_received(request(f"r{i}"))
            transports.append(transport)
        await asyncio.sleep(0.2)
        return transports

    transports = asyncio.run(burst())
    server.close()
    assert all(t.data.startswith(b"HTTP/1.1 200 OK") and t.data.endswith(b"0\r\n\r\n") for t in transports)
    rows = list(csv.DictReader(truth.open()))
    arrived = [float(r["ts"]) for r in rows if r["kind"] == "arrive"]
    first_write = min(float(r["ts"]) for r in rows if r["kind"] == "role")
    assert len(arrived) == 32 and max(arrived) <= first_write
    # each reply is due from its own arrival stamp: its first content chunk was scheduled 5 ms after it
    due = {r["request_id"]: float(r["scheduled_ts"]) for r in rows if r["kind"] == "content" and r["index"] == "1"}
    stamps = {r["request_id"]: float(r["ts"]) for r in rows if r["kind"] == "arrive"}
    assert all(abs(due[rid] - stamps[rid] - 0.005) < 3e-6 for rid in stamps)
