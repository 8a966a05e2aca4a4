"""orchestrate/errors.py: one error tree — every user-facing error is a ``TokenswarmError`` (one line, exit 2)
and also the builtin that fits, so callers may catch either."""

from __future__ import annotations

import pytest

from orchestrate.errors import (
    DatasetError,
    LoadRunError,
    ResultsError,
    ScenarioError,
    ServerError,
    ServerExitedError,
    ServerNotReadyError,
    TokenswarmError,
)


@pytest.mark.parametrize("error, builtin", [
    (ScenarioError, ValueError), (DatasetError, ValueError), (ResultsError, ValueError),
    (ServerError, RuntimeError), (LoadRunError, RuntimeError), (ServerNotReadyError, TimeoutError),
    (ServerExitedError, RuntimeError),
])
def test_every_error_is_ours_and_the_builtin_that_fits(error: type[TokenswarmError], builtin: type[Exception]) -> None:
    with pytest.raises(builtin):
        raise error("x")
    assert issubclass(error, TokenswarmError) and error.exit_code == 2


def test_the_server_errors_are_server_errors() -> None:
    """The run loop turns any of these into ``failed_to_load``."""
    assert issubclass(ServerExitedError, ServerError) and issubclass(ServerNotReadyError, ServerError)


def test_an_exit_keeps_the_servers_own_code_apart_from_the_clis() -> None:
    exc = ServerExitedError("server exited with code 134", returncode=134, cause="fatal error", hint="set fa off")
    assert (exc.returncode, exc.cause, exc.hint, exc.exit_code, str(exc)) == (134, "fatal error", "set fa off", 2,
                                                                              "server exited with code 134")
    bare = ServerExitedError("gone")
    assert (bare.returncode, bare.cause, bare.hint) == (None, None, None)
