"""orchestrate/load/locust_run.py: the Locust command line built from a plan, and how ``run_load`` names
the way a load ended (the Locust process is a small python stand-in here; real Locust runs in integration)."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import IO, Any

import pytest

from orchestrate.errors import LoadRunError
from orchestrate.load import locust_run
from orchestrate.load.locust_run import (
    DEFAULT_MASTER_PORT,
    EXPECT_WORKERS_WAIT_S,
    LoadPlan,
    Swarm,
    WebUi,
    locust_command,
    master_port,
    run_load,
    worker_command,
)
from orchestrate.results import VariantPaths
from orchestrate.scenario.spec import LoadSpec

LOAD = LoadSpec(users=32, spawn_rate=32, max_tokens=256, max_seconds=300, read_timeout_s=600, cache_prompt=True)
PLAN = LoadPlan(url="http://127.0.0.1:8080", load=LOAD, num_prompts=300, model=None)


def with_load(plan: LoadPlan, **load: Any) -> LoadPlan:
    """``plan`` with its load section changed."""
    return replace(plan, load=replace(plan.load, **load))


def value(cmd: list[str], flag: str) -> str:
    assert cmd.count(flag) == 1, (flag, cmd)
    return cmd[cmd.index(flag) + 1]


def test_the_plan_becomes_locusts_flags(tmp_path: Path) -> None:
    """Users, rate, server, prompts and where every output goes: the files ``report`` reads later."""
    paths = VariantPaths.create(tmp_path, "v")
    cmd = locust_command(with_load(PLAN, read_timeout_s=12.5, server_lost_after_s=7), paths)
    assert cmd[:3] == [sys.executable, "-m", "locust"] and "--headless" in cmd
    assert (value(cmd, "-u"), value(cmd, "-r"), value(cmd, "--host")) == ("32", "32", "http://127.0.0.1:8080")
    assert value(cmd, "--num-prompts") == "300" and "--max-tokens" not in cmd  # each prompt carries its own
    assert value(cmd, "--prompts-file") == str(paths.prompts) and value(cmd, "--records-file") == str(paths.records)
    assert value(cmd, "--read-timeout") == "12.5" and value(cmd, "--server-lost-after") == "7"
    assert value(cmd, "--csv") == str(paths.locust_prefix) and "--csv-full-history" in cmd
    assert value(cmd, "--json-file") == str(paths.locust_json_stem)  # Locust appends .json itself
    assert value(cmd, "--run-time") == "300s"
    assert "--no-cache-prompt" not in cmd and "--model" not in cmd and "--master" not in cmd


def test_optional_flags_follow_the_plan(tmp_path: Path) -> None:
    paths = VariantPaths.create(tmp_path, "v")
    cmd = locust_command(replace(with_load(PLAN, max_seconds=None, cache_prompt=False), model="gemma"), paths)
    assert "--run-time" not in cmd, "no time cap: Locust runs until every prompt is sent"
    assert "--no-cache-prompt" in cmd and value(cmd, "--model") == "gemma"
    assert "--ignore-eos" not in cmd
    ignoring = LoadPlan("http://h:1", LoadSpec(dataset="random", num_prompts=4), 4, None)
    assert "--ignore-eos" in locust_command(ignoring, paths), "dataset random sends ignore_eos by default"
    assert value(locust_command(with_load(PLAN, max_seconds=90.7), paths), "--run-time") == "90s"


def test_a_load_sections_mode_reaches_locust(tmp_path: Path) -> None:
    """The plan holds the load section: its users, its rate and its multi-turn replay become flags."""
    load = LoadSpec(users=4, spawn_rate=2, num_prompts=50, max_tokens=9, rate=3.0, mode="multi_turn", seed=5,
                    server_lost_after_s=9)
    cmd = locust_command(LoadPlan("http://h:1", load, 40, "m"), VariantPaths.create(tmp_path, "v"))
    assert (value(cmd, "-u"), value(cmd, "-r")) == ("4", "2")
    assert value(cmd, "--num-prompts") == "40", "the prompts written, not the section's num_prompts"
    assert value(cmd, "--rate") == "3" and value(cmd, "--mode") == "multi_turn"
    assert value(cmd, "--server-lost-after") == "9" and value(cmd, "--model") == "m"


def test_local_workers_make_a_master_waiting_briefly_on_a_given_port(tmp_path: Path) -> None:
    swarm = Swarm(workers=3, master_bind_port=6001)
    cmd = locust_command(replace(PLAN, swarm=swarm), VariantPaths.create(tmp_path, "v"))
    assert "--master" in cmd and value(cmd, "--expect-workers") == "3"
    assert value(cmd, "--expect-workers-max-wait") == f"{EXPECT_WORKERS_WAIT_S:g}"
    assert value(cmd, "--master-bind-host") == "127.0.0.1" and value(cmd, "--master-bind-port") == "6001"
    assert "--enable-rebalancing" in cmd and "--join-token-file" not in cmd


def test_remote_workers_wait_as_long_as_asked_on_locusts_port(tmp_path: Path) -> None:
    swarm = Swarm(remote_workers=2, master_bind_host="0.0.0.0", workers_wait_s=42.5)
    cmd = locust_command(replace(PLAN, swarm=swarm), VariantPaths.create(tmp_path, "v"))
    assert value(cmd, "--expect-workers") == "2" and value(cmd, "--expect-workers-max-wait") == "42.5"
    assert value(cmd, "--master-bind-port") == str(DEFAULT_MASTER_PORT) == str(master_port(swarm))
    assert master_port(Swarm(master_bind_port=7000)) == 7000
    assert not Swarm().distributed and Swarm(workers=1).distributed and Swarm(remote_workers=1).distributed


def test_a_worker_needs_only_its_master() -> None:
    cmd = worker_command("10.0.0.5", 6001)
    assert cmd[:3] == [sys.executable, "-m", "locust"] and "--worker" in cmd
    assert value(cmd, "--master-host") == "10.0.0.5" and value(cmd, "--master-port") == "6001"


def test_locust_command_with_the_web_ui(tmp_path: Path) -> None:
    """The UI replaces --headless; -u and --run-time then only prefill its form."""
    paths = VariantPaths.create(tmp_path, "v")
    headless = locust_command(PLAN, paths)
    assert "--headless" in headless and "--web-port" not in headless and "--quit-on-stop" not in headless
    ui = locust_command(replace(PLAN, ui=WebUi("127.0.0.1", 8099)), paths)
    assert "--headless" not in ui
    assert ui[-4:] == ["--web-host", "127.0.0.1", "--web-port", "8099"]  # the UI stays up after Stop
    quitting = locust_command(replace(PLAN, ui=WebUi("127.0.0.1", 8099, quit_on_stop=True)), paths)
    assert quitting[-1] == "--quit-on-stop"
    assert ui[ui.index("-u") + 1] == "32" and ui[ui.index("--run-time") + 1] == "300s"  # prefill the form
    assert WebUi("::1", 8099).url == "http://[::1]:8099" and WebUi("0.0.0.0", 1).url == "http://0.0.0.0:1"


def test_progress_counts_complete_lines_by_how_each_request_ended(tmp_path: Path) -> None:
    """A line still being written is counted on the next look, once; answered, errors and cancelled apart."""
    records = tmp_path / "requests.jsonl"
    progress = locust_run.Progress()
    progress.read(records)
    assert progress.ended == 0 and progress.offset == 0  # not written yet
    records.write_bytes(b'{"status":"ok"}\n{"status":"error"}\n{"status":"cancelled"}\n{"status":"er')
    progress.read(records)
    assert (progress.answered, progress.errors, progress.cancelled) == (1, 1, 1)
    with records.open("ab") as f:
        f.write(b'ror"}\n')
    progress.read(records)
    assert (progress.answered, progress.errors, progress.cancelled) == (1, 2, 1)
    assert progress.offset == records.stat().st_size
    assert progress.line(48) == "1/48 answered, 2 errors, 1 cancelled, 44 left"
    assert locust_run.Progress(answered=3).line(3) == "3/3 answered, 0 errors, 0 left"


# --- run_load with a stand-in for the Locust process ---------------------------------------------------

def fake_locust(monkeypatch: pytest.MonkeyPatch, script: str) -> list[list[str]]:
    """``run_load`` spawns ``python -c script`` (argv[1]: the records file) instead of Locust."""
    spawned: list[list[str]] = []

    def spawn(cmd: list[str], log: IO[bytes], env: dict[str, str]) -> subprocess.Popen[bytes]:
        spawned.append(cmd)
        records = cmd[cmd.index("--records-file") + 1] if "--records-file" in cmd else ""
        return subprocess.Popen([sys.executable, "-c", script, records], stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)

    monkeypatch.setattr(locust_run, "_spawn", spawn)
    return spawned


WRITE_3 = "import sys, time; open(sys.argv[1], 'w').write('{}\\n' * 3); time.sleep({sleep}); sys.exit({code})"


def small_plan(**changes: Any) -> LoadPlan:
    return replace(LoadPlan(url="http://127.0.0.1:1", load=LoadSpec(users=1, spawn_rate=1, max_tokens=4, max_seconds=None,
                                                                 read_timeout_s=5, cache_prompt=True),
                            num_prompts=3, model=None), **changes)


def test_a_load_that_sends_every_prompt_ends_by_num_prompts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Exit 1 (some request failed) is a result, not an error."""
    fake_locust(monkeypatch, WRITE_3.replace("{sleep}", "0").replace("{code}", "1"))
    outcome = run_load(with_load(small_plan(), max_seconds=60), VariantPaths.create(tmp_path, "v"), "v")
    assert (outcome.exit_code, outcome.stopped_by) == (1, "num_prompts") and outcome.wall_s < 60


def test_a_load_that_ran_to_its_time_cap_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_locust(monkeypatch, WRITE_3.replace("{sleep}", "1.2").replace("{code}", "0"))
    outcome = run_load(with_load(small_plan(), max_seconds=1), VariantPaths.create(tmp_path, "v"), "v")
    assert outcome.stopped_by == "time_cap" and outcome.wall_s >= 1


LIKE_LOCUST = ("import signal, sys, time; signal.signal(signal.SIGTERM, lambda *_: sys.exit(0)); time.sleep(60)")
"""Locust quits cleanly on SIGTERM (exit 0, its stats written)."""


def test_a_server_that_goes_down_stops_locust_and_names_the_end(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """``stop_when`` is asked while Locust runs; its verdict is how the load ended, and Locust is stopped."""
    fake_locust(monkeypatch, LIKE_LOCUST)
    asked = [0]

    def down() -> str | None:
        asked[0] += 1
        return "server_lost" if asked[0] >= 3 else None

    started = time.monotonic()
    outcome = run_load(small_plan(), VariantPaths.create(tmp_path, "v"), "v", stop_when=down)
    assert outcome.stopped_by == "server_lost" and asked[0] == 3
    assert time.monotonic() - started < 10, "Locust was stopped, not waited for"


def test_locust_failing_without_stats_is_an_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_locust(monkeypatch, "import sys; sys.exit(3)")
    paths = VariantPaths.create(tmp_path, "v")
    with pytest.raises(LoadRunError, match="locust exited with code 3 and wrote no stats"):
        run_load(small_plan(), paths, "v")
    paths.locust_json.write_text("[]")  # stats written: whatever it measured is kept
    assert run_load(small_plan(), paths, "v").exit_code == 3


def test_local_workers_are_spawned_and_stopped_with_the_master(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Each worker gets its master's free port; a worker still running when the master ends is stopped."""
    spawned = fake_locust(monkeypatch, "import sys, time; time.sleep(0 if sys.argv[1] else 60)")
    started = time.monotonic()
    run_load(small_plan(swarm=Swarm(workers=2)), VariantPaths.create(tmp_path, "v"), "v")
    assert time.monotonic() - started < 10
    master, *workers = spawned
    port = value(master, "--master-bind-port")
    assert port != str(DEFAULT_MASTER_PORT) and len(workers) == 2
    assert all("--worker" in w and value(w, "--master-port") == port for w in workers)
