"""A misbehaving server through the real Locust user: every fault classified, the worker never crashes.

The server (`tests/fixtures/bad_sse_server.py`) breaks each stream its own way, named in the prompt.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from locustfiles.command import LOCUSTFILE
from locustfiles.dataset import Prompt
from tests.helpers import read_jsonl

pytestmark = pytest.mark.integration

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "bad_sse_server.py"
EXPECTED = {
    "ok": ("ok", None),
    "bad_json": ("error", "bad_chunk"),
    "no_choices": ("error", "bad_chunk"),
    "no_done": ("error", "stream_cut"),
    "html_500": ("error", "http_500"),
    "huge_line": ("error", "bad_chunk"),
    "stall": ("error", "timeout"),
    "loading": ("error", "http_503:loading_model"),
    "slots_full": ("error", "http_503:unavailable_error"),
    "too_long": ("error", "http_400:exceed_context_size_error"),
    "unauthorized": ("error", "http_401:authentication_error"),
    "gzip": ("error", None),  # a compressed stream, although identity was asked for: some error class
}


@pytest.fixture
def bad_server() -> Iterator[str]:
    proc = subprocess.Popen([sys.executable, str(FIXTURE)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.kill()
        proc.wait()


def test_every_fault_is_classified_once_and_the_worker_survives(tmp_path: Path, bad_server: str) -> None:
    prompts = tmp_path / "prompts.jsonl"
    cases = list(EXPECTED)
    prompts.write_text("".join(Prompt(i, case, ({"role": "user", "content": f"CASE:{case} hello"},), 5, 3)
                               .to_json() + "\n" for i, case in enumerate(cases)))
    records_file = tmp_path / "requests.jsonl"
    proc = subprocess.run(
        [sys.executable, "-m", "locust", "-f", str(LOCUSTFILE), "--headless", "-u", "4", "-r", "4",
         "--host", bad_server, "--prompts-file", str(prompts), "--records-file", str(records_file),
         "--read-timeout", "2", "--json-file", str(tmp_path / "stats"), "--only-summary", "--run-time", "60s"],
        capture_output=True, text=True, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    records = {r["prompt_index"]: r for r in read_jsonl(records_file)}
    assert sorted(records) == list(range(len(cases)))  # each request recorded exactly once
    for i, case in enumerate(cases):
        status, error_class = EXPECTED[case]
        assert records[i]["status"] == status, (case, records[i])
        if error_class is not None:
            assert records[i]["error_class"] == error_class, (case, records[i])
        if status == "error":
            assert records[i]["error_class"], case
    stats = {(r["method"], r["name"]): r for r in json.loads((tmp_path / "stats.json").read_text())}
    chat = stats[("POST", "/v1/chat/completions")]
    assert chat["num_requests"] == len(cases) and chat["num_failures"] == len(cases) - 1
    assert records[cases.index("stall")]["e2e_ms"] >= 2000  # the read timeout, not the 10 s stall
