"""orchestrate/scenario/keypaths.py: merged sections, and the file line each merged value came from."""

from __future__ import annotations

from orchestrate.scenario.keypaths import MISSING, Origin, get_path, merge_sections, put_path


def test_merge_is_key_by_key_and_changes_neither_side() -> None:
    base = {"server": {"flags": {"parallel": 4, "fa": "on"}, "model": "m"}, "load": {"users": 2}}
    override = {"server": {"flags": {"fa": "off"}}, "load": [1, 2]}
    merged = merge_sections(base, override)
    assert merged == {"server": {"flags": {"parallel": 4, "fa": "off"}, "model": "m"}, "load": [1, 2]}
    merged["server"]["flags"]["parallel"] = 8
    override["load"].append(3)
    assert base["server"]["flags"]["parallel"] == 4 and merged["load"] == [1, 2]


def test_get_and_put_paths() -> None:
    section: dict = {}
    put_path(section, ("server", "flags", "fa"), "off")
    assert section == {"server": {"flags": {"fa": "off"}}}
    assert get_path(section, ("server", "flags", "fa")) == "off"
    assert get_path(section, ("server", "model")) is MISSING
    assert get_path(section, ("server", "flags", "fa", "deeper")) is MISSING


def test_origin_names_the_section_that_set_the_key() -> None:
    top, variant = {"load": {"users": 4}}, {"server": {"model": "m"}}
    at = Origin(variant, ("variants", 1), top, ())
    assert at("load", "users") == ("load", "users")  # inherited: the top level's line
    assert at("server", "model") == ("variants", 1, "server", "model")  # the variant's own
    assert at("server", "draft_model") == ("variants", 1, "server", "draft_model")  # unset: the variant's
    assert Origin({}, ("variants", 0), top, ())("load", "seed") == ("load", "seed")  # an empty variant: the top's


def test_a_matrix_or_retry_value_points_at_the_key_that_set_it() -> None:
    at = Origin({}, ("variants", 0), {"load": {"users": 4}}, (), {("load", "users"): ("matrix", "users", 2)})
    assert at("load", "users") == ("matrix", "users", 2)
    retried = at.also({("server", "flags", "fa"): ("on_load_failure", "retry_with", "fa")})
    assert retried("server", "flags", "fa") == ("on_load_failure", "retry_with", "fa")
    assert retried("load", "users") == ("matrix", "users", 2)
