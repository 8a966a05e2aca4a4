"""locustfiles/admission.py and orchestrate/load/jointoken.py: who may join a master, and where the token lives.

The Locust wiring (``joingate.py``) runs against real processes in ``integration/test_distributed.py``.
"""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from locustfiles.admission import (JOIN_TOKEN_ENV, NO_TOKEN, WRONG_TOKEN, AdmissionError, Gate, join_token, proof,
                                   read_token_file)
from orchestrate.load import jointoken
from orchestrate.errors import ScenarioError
from orchestrate.load.loadrun import LoadPlan, Swarm, locust_command, worker_command
from orchestrate.results import VariantPaths


def test_a_worker_that_answers_its_nonce_with_the_token_is_admitted() -> None:
    gate = Gate("s3cret")
    assert not gate.admits("w1")
    nonce = gate.challenge("w1")
    assert gate.check("w1", proof("s3cret", nonce, "w1")) is None
    assert gate.admits("w1") and not gate.admits("w2")


@pytest.mark.parametrize("answer", [proof("guess", "n", "w1"), None, 42, "é" * 64, ["x"]])
def test_anything_else_is_a_wrong_token_never_an_exception(answer: object) -> None:
    gate = Gate("s3cret")
    gate.challenge("w1")
    assert gate.check("w1", answer) == WRONG_TOKEN and not gate.admits("w1")


def test_a_proof_is_good_for_one_nonce_and_one_client_id() -> None:
    gate = Gate("s3cret")
    seen = proof("s3cret", gate.challenge("w1"), "w1")
    assert gate.check("w1", seen) is None
    nonce = gate.challenge("w2")
    assert gate.check("w2", seen) == WRONG_TOKEN  # another worker replaying a proof seen on the wire
    assert gate.check("w2", proof("s3cret", nonce, "w2")) == "a proof without a challenge"  # a nonce answers once


def test_a_worker_without_a_token_says_so_and_a_rejection_is_said_once() -> None:
    gate = Gate("s3cret")
    gate.challenge("w1")
    reason = gate.check("w1", "")
    assert reason == NO_TOKEN
    gate.drop("w1", "stats")  # not rejected yet: nothing to count it against
    assert gate.reject("w1", reason) is True and gate.reject("w1", reason) is False
    gate.challenge("w1")
    assert gate.check("w1", proof("s3cret", "any", "w1")) == NO_TOKEN  # rejected for good
    for kind in ("tokenswarm_records", "tokenswarm_records", "stats"):
        gate.drop("w1", kind)
    assert gate.to_json() == {"join_token": True, "rejected_workers": {
        "w1": {"reason": NO_TOKEN, "dropped": {"tokenswarm_records": 2, "stats": 1}}}}


def test_without_a_token_the_gate_is_open() -> None:
    gate = Gate(None)
    assert gate.open and gate.admits("anyone") and gate.check("anyone", None) is None
    assert gate.to_json() == {"join_token": False, "rejected_workers": {}}


def test_the_token_comes_from_the_file_else_the_environment(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(JOIN_TOKEN_ENV, raising=False)
    assert join_token() is None and join_token("") is None
    monkeypatch.setenv(JOIN_TOKEN_ENV, "  from-env\n")
    assert join_token() == "from-env"
    (tmp_path / "t").write_text("from-file\n")
    assert join_token(tmp_path / "t") == "from-file"
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(AdmissionError, match=r"^--join-token-file: .*empty is empty$"):
        read_token_file(tmp_path / "empty")
    with pytest.raises(AdmissionError, match=r"^--join-token-file: cannot read .*nope \(No such file or directory\)$"):
        read_token_file(tmp_path / "nope")


def test_the_kept_token_is_made_once_readable_by_its_owner_only(tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("TOKENSWARM_CACHE", str(tmp_path))
    monkeypatch.delenv(JOIN_TOKEN_ENV, raising=False)
    path = jointoken.token_file_of(None, remote=True)
    assert path == tmp_path / "secrets" / "join-token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    token = path.read_text().strip()
    assert len(token) >= 32
    assert jointoken.token_file_of(None, remote=True) == path and path.read_text().strip() == token  # reused
    out = capsys.readouterr().out
    assert out.count("made a join token") == 1 and token not in out
    assert jointoken.token_file_of(None, remote=False) is None
    with pytest.raises(ScenarioError, match="^--join-token-file: cannot read"):
        jointoken.token_file_of(tmp_path / "nope", remote=True)


def test_local_workers_without_a_token_get_one_made_for_the_run(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv(JOIN_TOKEN_ENV, raising=False)
    first, second = jointoken.locust_env(True, None), jointoken.locust_env(True, None)
    assert set(first) == {JOIN_TOKEN_ENV} and first != second and len(first[JOIN_TOKEN_ENV]) >= 32
    assert jointoken.locust_env(False, None) == {} and jointoken.locust_env(True, tmp_path / "t") == {}
    monkeypatch.setenv(JOIN_TOKEN_ENV, "given")
    assert jointoken.locust_env(True, None) == {}  # inherited as it is


def test_locust_gets_the_token_file_by_path_and_workers_are_told_where_it_is(tmp_path: Path) -> None:
    path = tmp_path / "join-token"
    plan = LoadPlan(url="http://127.0.0.1:8080", users=4, spawn_rate=4, num_prompts=10, max_tokens=16,
                    max_seconds=None, read_timeout_s=60, cache_prompt=True, model=None,
                    swarm=Swarm(remote_workers=2, master_bind_host="0.0.0.0", join_token_file=path))
    master = locust_command(plan, VariantPaths.create(tmp_path, "v"))
    assert master[master.index("--join-token-file") + 1] == str(path)
    assert worker_command("10.0.0.5", 5557, path)[-2:] == ["--join-token-file", str(path)]
    assert "--join-token-file" not in worker_command("10.0.0.5", 5557)
    told = jointoken.how_to_join(5557, path)
    assert f"--join-token-file FILE`, FILE being a copy of {path}" in told and JOIN_TOKEN_ENV in told
    assert jointoken.how_to_join(5557, None).endswith(f"with this host's {JOIN_TOKEN_ENV} in its environment")
