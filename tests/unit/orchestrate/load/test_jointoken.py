"""orchestrate/load/jointoken.py: which join token a distributed run uses, where it is kept, how Locust gets
it (never on a command line) and what a worker host is told."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from locustfiles.admission import JOIN_TOKEN_ENV
from orchestrate.errors import ScenarioError
from orchestrate.load import jointoken
from orchestrate.load.locust_run import LoadPlan, Swarm, locust_command, worker_command
from orchestrate.results import VariantPaths
from orchestrate.scenario.spec import LoadSpec


def test_a_given_token_file_is_used_and_checked_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOKENSWARM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv(JOIN_TOKEN_ENV, "from-env")
    given = tmp_path / "t"
    given.write_text("from-file\n")
    assert jointoken.token_file_of(given, remote=True) == given and jointoken.token_file_of(given, remote=False) == given
    assert jointoken.token_file_of(None, remote=True) is None, "the environment's token is inherited as it is"
    assert not (tmp_path / "cache").exists(), "no token kept when one is given"
    given.write_text("  \n")
    with pytest.raises(ScenarioError, match="is empty$"):
        jointoken.token_file_of(given, remote=False)


def test_the_kept_token_is_made_once_readable_by_its_owner_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
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


def test_local_workers_without_a_token_get_one_made_for_the_run(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(JOIN_TOKEN_ENV, raising=False)
    first, second = jointoken.locust_env(True, None), jointoken.locust_env(True, None)
    assert set(first) == {JOIN_TOKEN_ENV} and first != second and len(first[JOIN_TOKEN_ENV]) >= 32
    assert jointoken.locust_env(False, None) == {} and jointoken.locust_env(True, tmp_path / "t") == {}
    monkeypatch.setenv(JOIN_TOKEN_ENV, "given")
    assert jointoken.locust_env(True, None) == {}  # inherited as it is


def test_locust_gets_the_token_file_by_path_and_workers_are_told_where_it_is(tmp_path: Path) -> None:
    path = tmp_path / "join-token"
    plan = LoadPlan(url="http://127.0.0.1:8080", load=LoadSpec(users=4, spawn_rate=4, max_tokens=16, read_timeout_s=60),
                    num_prompts=10, model=None, swarm=Swarm(remote_workers=2, master_bind_host="0.0.0.0", join_token_file=path))
    master = locust_command(plan, VariantPaths.create(tmp_path, "v"))
    assert master[master.index("--join-token-file") + 1] == str(path)
    assert worker_command("10.0.0.5", 5557, path)[-2:] == ["--join-token-file", str(path)]
    assert "--join-token-file" not in worker_command("10.0.0.5", 5557)
    told = jointoken.how_to_join(5557, path)
    assert f"--join-token-file FILE`, FILE being a copy of {path}" in told and JOIN_TOKEN_ENV in told
    assert jointoken.how_to_join(5557, None).endswith(f"with this host's {JOIN_TOKEN_ENV} in its environment")
