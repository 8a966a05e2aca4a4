"""locustfiles/admission.py: who may join a master (where the token lives is ``test_jointoken.py``).

The Locust wiring (``joingate.py``) runs against real processes in ``integration/test_distributed.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from locustfiles.admission import (
    JOIN_TOKEN_ENV,
    NO_TOKEN,
    WRONG_TOKEN,
    AdmissionError,
    Gate,
    join_token,
    proof,
    read_token_file,
)


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
