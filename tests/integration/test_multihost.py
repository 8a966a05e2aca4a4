"""Master and workers on different hosts: network namespaces made by this test, joined by veth pairs.

Hosts (namespaces): `master` runs `tokenswarm run --master` and the embedded server; `w1` and `w2`
run plain `locust --worker` from a folder holding only a copy of `locustfiles/`, where importing the
orchestrator fails and no dataset exists: a worker host needs neither. A fourth namespace is the
switch (a bridge). Addresses are the test's own (10.231.0.0/24 inside these namespaces only).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import read_jsonl, write_scenario

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
SUBNET = "10.231.0"
HOSTS = {"master": f"{SUBNET}.1", "w1": f"{SUBNET}.2", "w2": f"{SUBNET}.3"}


def sh(*args: str) -> None:
    subprocess.run(args, check=True, capture_output=True, text=True)


@pytest.fixture
def hosts() -> Iterator[dict[str, str]]:
    """Namespace name per host, wired to a bridge in a switch namespace; removed afterwards."""
    if os.geteuid() != 0 or shutil.which("ip") is None:
        pytest.skip("network namespaces need root and iproute2 (CI runs as root)")
    tag = f"ts{os.getpid() % 100000}"
    names = {host: f"{tag}-{host}" for host in HOSTS}
    switch = f"{tag}-sw"
    created: list[str] = []
    try:
        for ns in (switch, *names.values()):
            sh("ip", "netns", "add", ns)
            created.append(ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        sh("ip", "-n", switch, "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", switch, "link", "set", "br0", "up")
        for i, (host, ns) in enumerate(names.items()):
            outer, inner = f"{tag}v{i}s", f"{tag}v{i}h"
            sh("ip", "link", "add", outer, "type", "veth", "peer", "name", inner)
            sh("ip", "link", "set", outer, "netns", switch)
            sh("ip", "link", "set", inner, "netns", ns)
            sh("ip", "-n", switch, "link", "set", outer, "master", "br0", "up")
            sh("ip", "-n", ns, "addr", "add", f"{HOSTS[host]}/24", "dev", inner)
            sh("ip", "-n", ns, "link", "set", inner, "up")
    except (subprocess.CalledProcessError, OSError) as exc:
        for ns in created:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        pytest.skip(f"cannot create network namespaces here: {getattr(exc, 'stderr', exc)}")
    try:
        yield names
    finally:
        for ns in created:
            pids = subprocess.run(["ip", "netns", "pids", ns], capture_output=True, text=True).stdout.split()
            for pid in pids:
                subprocess.run(["kill", "-9", pid], capture_output=True)
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def worker_host_folder(tmp_path: Path) -> Path:
    """What a worker host has: the Locust side only. Importing the orchestrator fails loudly there."""
    folder = tmp_path / "worker-host"
    shutil.copytree(ROOT / "locustfiles", folder / "locustfiles",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "orchestrate").mkdir()
    (folder / "orchestrate" / "__init__.py").write_text(
        'raise ImportError("a worker host has no orchestrator")\n')
    return folder


def test_master_and_workers_on_different_hosts(tmp_path: Path, hosts: dict[str, str]) -> None:
    scenario = write_scenario(tmp_path, server={"host": HOSTS["master"], "flags": {"parallel": 4}},
                              load={"users": 4, "num_prompts": 24, "max_tokens": 16})
    results = tmp_path / "results"
    token = tmp_path / "join-token"
    token.write_text("the-join-token-of-this-test\n")
    master = subprocess.Popen(
        ["ip", "netns", "exec", hosts["master"], sys.executable, "-m", "orchestrate.cli", "run", str(scenario),
         "--master", "--expect-workers", "2", "--master-bind-host", HOSTS["master"], "--results-dir", str(results),
         "--join-token-file", str(token)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    folder = worker_host_folder(tmp_path)
    env = {"PATH": os.environ["PATH"], "PYTHONPATH": str(folder), "HOME": str(folder),
           "TOKENSWARM_JOIN_TOKEN": token.read_text().strip()}  # how a worker host gets the token: its environment
    workers = [subprocess.Popen(
        ["ip", "netns", "exec", hosts[w], sys.executable, "-m", "locust", "-f", "locustfiles/locustfile.py",
         "--worker", "--master-host", HOSTS["master"], "--master-port", "5557"],
        cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for w in ("w1", "w2")]
    try:
        out, _ = master.communicate(timeout=180)
        worker_out = [w.communicate(timeout=60)[0] for w in workers]
    finally:
        for p in (master, *workers):
            if p.poll() is None:
                p.kill()
    assert master.returncode == 0, out + "\n".join(worker_out)
    assert all(w.returncode == 0 for w in workers), "\n".join(worker_out)
    assert all("no orchestrator" not in text for text in worker_out)
    variant = next(results.glob("*/v"))
    summary = json.loads((variant / "summary.json").read_text())
    records = read_jsonl(variant / "requests.jsonl")
    assert summary["requests"]["completed"] == 24
    assert sorted(r["prompt_index"] for r in records) == list(range(24))
    assert len({r["worker"] for r in records}) == 2
    assert summary["crosscheck_agrees"] is True
    assert summary["server"]["facts"]["total_slots"] == 4
    assert not list(folder.rglob("*.json"))  # no dataset on the worker host
