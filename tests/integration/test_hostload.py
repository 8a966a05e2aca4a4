"""The host's own load, measured while a real run goes on: a CPU hog of the test's own (a process
neither the server nor tokenswarm) during the second of two variants only."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers import write_scenario

pytestmark = pytest.mark.integration

HOG = "import time\nend = time.time() + 120\nwhile time.time() < end: pass\n"


def test_a_cpu_hog_during_one_variant_is_seen_in_that_variant_only(tmp_path: Path) -> None:
    """Flash attention on (quiet) vs off (a hog of the test's own running): the off variant's summary
    shows the foreign CPU, and the pair, one setting apart, is confounded by host load."""
    scenario = write_scenario(tmp_path, load={"users": 4, "num_prompts": 120, "max_tokens": 128},
                              variants=[{"name": "quiet", "server": {"flags": {"parallel": 4, "threads": 1,
                                                                               "flash-attn": "on"}}},
                                        {"name": "hogged", "server": {"flags": {"parallel": 4, "threads": 1,
                                                                                "flash-attn": "off"}}}])
    results = tmp_path / "results"
    run = subprocess.Popen([sys.executable, "-m", "orchestrate.cli", "run", str(scenario), "--results-dir",
                            str(results)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    hog = None
    output = []
    try:
        assert run.stdout is not None
        for line in run.stdout:
            output.append(line)
            if line.startswith("[hogged] starting") and hog is None:
                hog = subprocess.Popen([sys.executable, "-c", HOG])
                time.sleep(0.5)
        assert run.wait(240) == 0, "".join(output)
    finally:
        if hog is not None:
            hog.kill()
            hog.wait()
        run.kill()
    assert hog is not None, "".join(output)
    (run_dir,) = results.iterdir()
    quiet = json.loads((run_dir / "quiet" / "summary.json").read_text())["host"]
    hogged = json.loads((run_dir / "hogged" / "summary.json").read_text())["host"]
    assert quiet["server_processes"] == hogged["server_processes"] == "launcher"
    assert quiet["foreign_cpu_pct"]["p50"] < 10 and quiet["busy"] is False, quiet
    assert hogged["foreign_cpu_pct"]["p50"] > 40 and hogged["busy"] is True, hogged  # a core's worth, shared
    assert hogged["server_cpu_pct"]["max"] > 0 and hogged["own_cpu_pct"]["max"] > 0
    md = (run_dir / "hogged" / "summary.md").read_text()
    assert "the host was busy while this variant ran: other processes used" in md and "— **busy**" in md
    assert "— quiet" in (run_dir / "quiet" / "summary.md").read_text()
    compared = json.loads((run_dir / "compare.json").read_text())
    (pair,) = compared["effects"]  # flash attention's effect is not read from this pair
    assert pair["confounded_by"] == ["host_load"] and pair["factor"] == "server.flags.flash-attn"
    assert compared["confounded"] == []
    assert pair["busy"][0] is None and "other processes used" in pair["busy"][1]
    assert "confounded by host load (during hogged: other processes used" in (run_dir / "compare.md").read_text()
