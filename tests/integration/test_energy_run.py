"""Energy per token, end to end: ``tokenswarm run`` with a stand-in ``nvidia-smi`` on ``PATH``
(``tests/fixtures/nvidia-smi/nvidia-smi``: one GPU at a scripted power) against reference servers.

This machine has no GPU and no RAPL counters; the stand-in is the check of everything after the reading
until a GPU host runs ``benchmarks/gpu_check.sh``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

import pytest
import yaml

from tests.browser import page_figures
from tests.conftest import reference_server
from tests.helpers import tokenswarm_run, write_scenario

pytestmark = pytest.mark.integration

STANDIN = Path(__file__).resolve().parents[1] / "fixtures" / "nvidia-smi"


def run(tmp_path: Path, itls: dict[str, str], monkeypatch: pytest.MonkeyPatch, **env: str) -> Path:
    """One run, a variant per reference server (name → its ITL in ms), 8 prompts of 20 tokens at 2 users."""
    monkeypatch.setenv("PATH", f"{STANDIN}{os.pathsep}{os.environ['PATH']}")
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    with ExitStack() as servers:
        urls = {name: servers.enter_context(reference_server(tmp_path / name, "--ttft-ms", "50", "--itl-ms", itl))
                for name, itl in itls.items()}
        path = tmp_path / "scenario.yaml"
        path.write_text(yaml.safe_dump({
            "name": "energy", "host_limits": {"foreign_cpu_pct": 10000, "steal_pct": 100},  # a busy CI host: no confound
            "cost": {"usd_per_hour": 3.5, "usd_per_kwh": 0.15},
            "load": {"dataset": "synthetic:200", "users": 2, "num_prompts": 8, "max_tokens": 20,
                                       "sampling": {"fixed_output_tokens": 20}},
            "variants": [{"name": name, "server": {"launcher": "external", "url": url}} for name, url in urls.items()]}))
        proc, run_dir = tokenswarm_run(tmp_path, path)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return run_dir


def test_a_fixed_power_gives_power_times_the_window_and_compare_states_the_energy_ratio(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """250 W throughout: joules = 250 W × the measured window (within 2 %), tokens per joule follow; a server
    2.5 times as slow per token at the same power costs about twice the joules per token (its TTFT is the same), and compare.md says so.
    ``tokenswarm report`` rebuilds the block from metrics.jsonl."""
    run_dir = run(tmp_path, {"fast": "20", "slow": "50"}, monkeypatch, STANDIN_WATTS="250")
    blocks = {}
    for name in ("fast", "slow"):
        summary = json.loads((run_dir / name / "summary.json").read_text())
        block = blocks[name] = summary["energy"]
        assert block["source"] == "nvidia-smi" and block["coverage"] == 1.0
        assert block["joules"] == pytest.approx(250.0 * summary["duration_s"], rel=0.02)
        assert block["idle_watts"] == pytest.approx(250.0)
        assert block["output_tokens_per_joule"] == pytest.approx(8 * 20 / block["joules"])
        assert "energy " in (run_dir / name / "summary.md").read_text()
        usd = summary["duration_s"] / 3600 * 3.5 + block["joules"] / 3.6e6 * 0.15  # by hand, from the summary
        assert summary["cost"]["usd"] == pytest.approx(usd, rel=1e-12)
        assert summary["cost"]["usd_per_mtok_output"] == pytest.approx(usd / summary["tokens"]["output"] * 1e6, rel=1e-12)
        assert summary["cost"]["usd_per_mtok_input"] == pytest.approx(usd / summary["tokens"]["prompt"] * 1e6, rel=1e-12)
        assert f"- {name}: ${summary['cost']['usd_per_mtok_output']:,.2f} per million output tokens" in \
            (run_dir / "compare.md").read_text()
    ratio = blocks["slow"]["joules_per_output_token"] / blocks["fast"]["joules_per_output_token"]
    assert 1.6 < ratio < 3.0
    (effect,) = json.loads((run_dir / "compare.json").read_text())["effects"]
    read = effect["ratios"]["joules_per_output_token"]  # over the steady-state windows when both have one
    assert 1.6 < read < 3.0 and f"J per output token ×{read:.2f}" in (run_dir / "compare.md").read_text()
    subprocess.run([sys.executable, "-m", "orchestrate.cli", "report", str(run_dir)], check=True, capture_output=True)
    rebuilt = json.loads((run_dir / "fast" / "summary.json").read_text())
    assert rebuilt["energy"] == blocks["fast"] and rebuilt["cost_rates"] == {"usd_per_hour": 3.5, "usd_per_kwh": 0.15}


def test_power_readings_that_stop_half_way_give_no_joules_and_say_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_dir = run(tmp_path, {"v": "50"}, monkeypatch, STANDIN_FAIL_AFTER="2", STANDIN_STATE=str(tmp_path / "calls"))
    block = json.loads((run_dir / "v" / "summary.json").read_text())["energy"]
    assert block["joules"] is None and 0 < block["coverage"] < 0.95, block
    assert "nvidia-smi stopped answering (CalledProcessError" in block["unavailable"], block
    assert "energy: not measured — power readings cover" in (run_dir / "v" / "summary.md").read_text()
    cost = json.loads((run_dir / "v" / "summary.json").read_text())["cost"]
    assert cost["usd_energy"] is None and cost["usd"] == cost["usd_time"] and cost["energy_unpriced"] == block["unavailable"]


def test_a_server_given_one_gpu_is_charged_that_gpus_power_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two GPUs at 250 W and 90 W; the embedded server (the tiny model) started with CUDA_VISIBLE_DEVICES=1 is
    charged GPU 1's 90 W, not the machine's 340 W, and the block says which GPUs."""
    for key, value in {"PATH": f"{STANDIN}{os.pathsep}{os.environ['PATH']}", "STANDIN_WATTS": "250",
                       "STANDIN_WATTS_1": "90", "CUDA_VISIBLE_DEVICES": "1"}.items():
        monkeypatch.setenv(key, value)
    scenario = write_scenario(tmp_path, load={"users": 2, "num_prompts": 16, "max_tokens": 96})
    proc, run_dir = tokenswarm_run(tmp_path, scenario)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    summary = json.loads((run_dir / "v" / "summary.json").read_text())
    block = summary["energy"]
    assert block["devices"] == "GPUs 1" and block["source"] == "nvidia-smi"
    assert block["mean_watts"] == pytest.approx(90.0) and block["idle_watts"] == pytest.approx(90.0)
    assert block["joules"] == pytest.approx(90.0 * summary["duration_s"], rel=0.02)
    assert "GPUs 1)" in proc.stdout


def test_a_gpu_that_throttled_is_named_and_confounds_its_comparison(tmp_path: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The same run twice against two reference servers, the stand-in GPU throttling (hw_thermal_slowdown, SM
    clock held at 1200 MHz) during the second: its summary says so, report.html draws the clock, and
    ``tokenswarm compare`` of the two runs reads no clean effect from the pair."""
    cool = run(tmp_path / "cool", {"fast": "20"}, monkeypatch)
    hot = run(tmp_path / "hot", {"slow": "50"}, monkeypatch, STANDIN_THROTTLE="0x40")
    calm, throttled = (json.loads((r / name / "summary.json").read_text()) for r, name in ((cool, "fast"), (hot, "slow")))
    assert calm["gpus"]["throttled"] is False and calm["gpus"]["gpus"][0]["sm_clock_mhz_min"] == 1980.0
    gpu = throttled["gpus"]["gpus"][0]
    assert throttled["gpus"]["throttled"] is True and gpu["reasons"] == ["hw_thermal_slowdown"]
    assert gpu["throttled_samples"] == gpu["samples"] >= 2 and gpu["temperature_c_max"] == 91.0
    assert any(note.startswith("a GPU throttled while this ran (GPU 0: hw_thermal_slowdown") for note in throttled["notes"])
    assert "**throttled in" in (hot / "slow" / "summary.md").read_text()
    assert "GPU SM clock (the slowest: a drop is a throttle)" in {f["layout"]["title"]["text"]
                                                                 for f in page_figures(hot / "report.html").values()}
    proc = subprocess.run([sys.executable, "-m", "orchestrate.cli", "compare", str(cool), str(hot)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads((cool / "compare.json").read_text())
    (effect,) = data["effects"]  # one setting apart (the server's URL), but not a fair pair
    assert effect["factor"] == "server.url" and effect["confounded_by"] == ["gpu_throttle"]
    assert "a GPU that throttled" in proc.stdout and "- none: no two completed variants differ" in proc.stdout
