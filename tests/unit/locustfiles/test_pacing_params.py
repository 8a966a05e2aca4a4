"""locustfiles/pacing_params.py: a ramp stage and its default spawn rate, shared by ``--stages`` and the scenario.

``--stages`` applying the default stage by stage is checked in test_stages.py (it needs Locust).
"""

from __future__ import annotations

import dataclasses

import pytest

from locustfiles.pacing_params import Stage, default_spawn_rate


def test_a_first_stage_reaches_its_users_in_about_a_second() -> None:
    assert default_spawn_rate(8, None) == 8.0
    assert isinstance(default_spawn_rate(8, None), float)


def test_a_ramp_down_stops_its_users_in_about_a_second_too() -> None:
    """Locust stops users at the spawn rate: 6 → 1 users at 1/s would take 5 s, at 6/s under one."""
    assert default_spawn_rate(1, Stage(duration_s=10, users=6, spawn_rate=2)) == 6.0
    assert default_spawn_rate(6, Stage(duration_s=10, users=1, spawn_rate=1)) == 6.0


def test_a_stage_is_a_value() -> None:
    stage = Stage(duration_s=5.0, users=4, spawn_rate=4.0)
    assert stage == Stage(5.0, 4, 4.0) and hash(stage) == hash(Stage(5.0, 4, 4.0))
    with pytest.raises(dataclasses.FrozenInstanceError):
        stage.users = 5  # type: ignore[misc]

