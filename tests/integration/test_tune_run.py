"""``tokenswarm tune`` against the reference server started as llama-server (``tests.conftest.reference_binary``),
whose capacity the test knows: ``--queue`` serves at most ``parallel`` streams, each token ``slot-cost-ms`` slower
per other busy slot, and a server of more slots than its memory holds fails to load as out of memory."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.browser import page_figures
from tests.conftest import reference_binary

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SLO = {"ttft_ms": 150, "tpot_ms": 30}
ITL_MS, SLOT_MIB, LIMIT_MIB = 10, 8, 100


def truth(parallel: int, cost: int) -> int | None:
    """Users served within the SLO: at most the slots (one more waits a whole reply: TTFT), and TPOT
    10 + cost × (users - 1) ms ≤ 30; None: 16 slots of 8 MiB do not fit in 100 MiB."""
    if parallel * SLOT_MIB > LIMIT_MIB:
        return None
    return min(parallel, 1 + (SLO["tpot_ms"] - ITL_MS) // cost)


def tune_scenario(tmp_path: Path, space: dict[str, list[Any]], **tune: Any) -> Path:
    binary = reference_binary(tmp_path / "bin", "--queue", "--ttft-ms", "20", "--itl-ms", str(ITL_MS),
                              "--slot-memory-mib", str(SLOT_MIB), "--memory-limit-mib", str(LIMIT_MIB))
    path = tmp_path / "tune.yaml"
    path.write_text(yaml.safe_dump({
        "name": "tune", "server": {"launcher": "process", "binary": str(binary), "model": "tiny", "ready_timeout_s": 30},
        "load": {"dataset": "synthetic:3000", "max_tokens": 16}, "slo": SLO,
        "search": {"range": [1, 16], "prompts_per_user": 3, "settle_s": 0.2, "warmup_prompts": 1},
        "tune": {"space": space, **tune}}, sort_keys=False))
    return path


def tune(tmp_path: Path, scenario: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    proc = subprocess.run([sys.executable, "-m", "orchestrate.cli", "tune", str(scenario), "--results-dir",
                           str(tmp_path / "results"), *args], capture_output=True, text=True, timeout=400, cwd=ROOT)
    runs = sorted((tmp_path / "results").iterdir())
    assert len(runs) == 1, proc.stdout + proc.stderr
    return proc, runs[0]


def test_the_climb_finds_the_grids_best_in_fewer_starts_and_prunes_what_runs_out_of_memory(tmp_path: Path) -> None:
    space = {"parallel": [2, 4, 8, 16], "slot-cost-ms": [2, 5]}
    proc, run = tune(tmp_path, tune_scenario(tmp_path, space))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads((run / "tune_summary.json").read_text())
    grid = {f"parallel-{p}_slot-cost-ms-{c}": truth(p, c) for p in space["parallel"] for c in space["slot-cost-ms"]}
    grid_best = max((n for n in grid if grid[n] is not None), key=lambda n: grid[n] or 0)
    assert result["best"] == grid_best == "parallel-8_slot-cost-ms-2"
    assert result["grid"] == 8 and result["server_starts"] == 6 < 8, proc.stdout
    assert result["command"] == "llama-server --model " + result["command"].split()[2] + " --parallel 8 --slot-cost-ms 2"
    cands = {c["name"]: c for c in result["candidates"]}
    for name, c in cands.items():  # every capacity searched in full is the server's own
        if c["state"] in ("best", "runner_up", "measured"):
            assert c["capacity"] == grid[name], (name, c)
    assert cands["parallel-4_slot-cost-ms-2"]["state"] == "runner_up"
    dropped = {n: c["floor"] for n, c in cands.items() if c["state"] == "dropped"}
    assert dropped == {"parallel-2_slot-cost-ms-2": 3, "parallel-8_slot-cost-ms-5": 7}  # the best so far less one
    big, pruned = cands["parallel-16_slot-cost-ms-2"], cands["parallel-16_slot-cost-ms-5"]
    assert big["state"] == "failed" and "out of memory" in big["why"], big
    assert pruned["state"] == "pruned" and "parallel-16_slot-cost-ms-2" in pruned["why"]
    assert not (run / "parallel-16_slot-cost-ms-5").exists() and not (run / "parallel-2_slot-cost-ms-5").exists()
    assert cands["parallel-2_slot-cost-ms-5"]["state"] == "not_tried"
    assert result["frontier_memory"][-1] == grid_best
    memory = {n: c["peak_memory_gib"] for n, c in cands.items() if c["peak_memory_gib"] is not None}
    assert memory["parallel-8_slot-cost-ms-2"] - memory["parallel-4_slot-cost-ms-2"] > 0.8 * 4 * SLOT_MIB / 1024
    summary = (run / "summary.md").read_text()
    assert summary.index("**Best: `parallel-8_slot-cost-ms-2`**") < summary.index("--parallel 8 --slot-cost-ms 2")
    assert "best: parallel-8_slot-cost-ms-2: serves 8 users" in proc.stdout
    drawn = page_figures(run / "report.html")
    assert sorted(drawn["tune-0"]["data"][0]["y"]) == sorted(c["capacity"] for c in cands.values()
                                                             if c["capacity"] is not None)
    before = (run / "tune_summary.json").read_text()
    again = subprocess.run([sys.executable, "-m", "orchestrate.cli", "report", str(run)], capture_output=True,
                           text=True, timeout=300, cwd=ROOT)
    assert again.returncode == 0 and (run / "tune_summary.json").read_text() == before, again.stderr


def test_a_tune_cut_short_resumes_keeping_the_candidates_done(tmp_path: Path) -> None:
    scenario = tune_scenario(tmp_path, {"parallel": [2, 4]}, strategy="grid", budget={"server_starts": 5})
    first = subprocess.Popen([sys.executable, "-m", "orchestrate.cli", "tune", str(scenario), "--results-dir",
                              str(tmp_path / "results")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             cwd=ROOT)
    assert first.stdout is not None
    seen = []
    deadline = time.monotonic() + 120
    for line in first.stdout:
        seen.append(line)
        if "probe-01-users" in line and "parallel-4" in line or time.monotonic() > deadline:
            break
    first.send_signal(signal.SIGINT)
    out = "".join(seen) + first.communicate(timeout=60)[0]
    run = next((tmp_path / "results").iterdir())
    ledger = json.loads((run / "tune.json").read_text())
    assert ledger["ended"] == "interrupted" and [e["name"] for e in ledger["tried"]] == [
        "parallel-2", "parallel-4"], out
    proc, again = tune(tmp_path, scenario, "--resume", str(run))
    assert proc.returncode == 0 and again == run, proc.stdout + proc.stderr
    assert "candidate 1: parallel-2: completed before: kept" in proc.stdout
    assert "candidate 2: parallel-4: cut short before: set aside" in proc.stdout
    ledger = json.loads((run / "tune.json").read_text())
    assert [e["kept"] for e in ledger["tried"]] == [True, False]
    assert ledger["ended"] == "every candidate ran or was pruned"
    result = json.loads((run / "tune_summary.json").read_text())
    assert (result["best"], result["server_starts"]) == ("parallel-4", 2)
    assert {c["name"]: c["capacity"] for c in result["candidates"]} == {"parallel-2": 2, "parallel-4": 4}
    assert any((run / "partial").iterdir())


def test_a_tune_of_the_real_llama_server_names_its_best_command_line_within_its_budget(
        tmp_path: Path, llama_server_binary: Path, gemma_model: Path) -> None:
    """Gemma 3 270M on the real llama-server: slots × flash attention × micro-batch, 2 server starts of 8; every
    candidate started is the real server with its flags (its /props says its slots), and the best is a command
    line."""
    path = tmp_path / "tune.yaml"
    path.write_text(yaml.safe_dump({
        "name": "real-tune", "server": {"launcher": "process", "binary": str(llama_server_binary),
                                        "model": "gemma-3-270m", "ready_timeout_s": 120,
                                        "flags": {"ctx-size": 4096, "threads": 2, "cont-batching": True}},
        "load": {"dataset": "sharegpt-v3", "allow_truncated": True, "max_tokens": 16, "seed": 0,
                 "sampling": {"max_prompt_tokens": 128}},
        "slo": {"ttft_ms": 1000, "tpot_ms": 60},
        "search": {"range": [1, 8], "prompts_per_user": 3, "warmup_prompts": 2, "settle_s": 0.5},
        "tune": {"space": {"parallel": [1, 4], "flash-attn": ["on", "off"], "ubatch-size": [128, 512]},
                 "budget": {"server_starts": 2}}}, sort_keys=False))
    proc, run = tune(tmp_path, path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    result = json.loads((run / "tune_summary.json").read_text())
    assert (result["server_starts"], result["grid"]) == (2, 8)
    assert result["ended"] == "the budget of 2 server starts was spent"
    started = [c for c in result["candidates"] if c["order"] is not None]
    assert [c["state"] for c in result["candidates"] if c["order"] is None] == ["not_tried"] * 6
    for c in started:
        summary = json.loads((run / c["name"] / "summary.json").read_text())
        argv = summary["server"]["launcher"]["argv"]
        assert argv[0] == str(llama_server_binary)
        assert argv[argv.index("--parallel") + 1] == c["values"]["parallel"]
        assert argv[argv.index("--flash-attn") + 1] == c["values"]["flash-attn"]
        assert argv[argv.index("--ubatch-size") + 1] == c["values"]["ubatch-size"]
        assert summary["server"]["facts"]["total_slots"] == int(c["values"]["parallel"])
        assert c["capacity"] == summary["capacity"]["max_passing"]
    best = next(c for c in started if c["name"] == result["best"])
    assert best["capacity"] is not None and best["capacity"] == max(c["capacity"] or 0 for c in started)
    assert result["command"] == (f"llama-server --model {gemma_model} --ctx-size 4096 --threads 2 --cont-batching "
                                 f"--parallel {best['values']['parallel']} --flash-attn {best['values']['flash-attn']} "
                                 f"--ubatch-size {best['values']['ubatch-size']}")
    assert result["command"] in (run / "summary.md").read_text() and result["command"] in proc.stdout
