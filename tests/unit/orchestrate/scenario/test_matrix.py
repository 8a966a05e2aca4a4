"""orchestrate/scenario/matrix.py: value names and the cross product (validation is test_parse's)."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrate.report.jsontypes import to_json
from orchestrate.report.schema.summary import RunFacts
from orchestrate.scenario.matrix import Combination, expand_matrix, fold, folded_factors, value_name
from orchestrate.scenario.spec import Factor


def fail(at: tuple[Any, ...], message: str) -> Exception:
    return ValueError(f"{'.'.join(map(str, at))}: {message}")


def target(key: Any, at: tuple[Any, ...]) -> tuple[str, ...]:
    return ("server", "flags", key)


@pytest.mark.parametrize("value, name", [
    (None, "none"), (True, "on"), (False, "off"), (32, "32"), (0.5, "0-5"), ("auto", "auto"),
    ("/models/gemma-4-E4B-MTP.gguf", "gemma-4-E4B-MTP"), ("/models/dir/", "dir"),
    ("ghcr.io/ggml-org/llama.cpp:server-cuda", "llama-cpp-server-cuda"),
    ("draft-mtp", "draft-mtp"), ("a b", "a-b"), ("!!", None), ({"a": 1}, None), ([1], None),
])
def test_value_names(value: object, name: str | None):
    assert value_name(value) == name


def test_cross_product_first_axis_slowest_with_the_key_paths_of_the_values():
    combos = expand_matrix({"a": [1, 2], "b": {"x": "X", "y": "Y"}}, fail, target)
    assert combos == [
        Combination("a-1_b-x", {("server", "flags", "a"): (1, ("matrix", "a", 0)),
                                ("server", "flags", "b"): ("X", ("matrix", "b", "x"))}),
        Combination("a-1_b-y", {("server", "flags", "a"): (1, ("matrix", "a", 0)),
                                ("server", "flags", "b"): ("Y", ("matrix", "b", "y"))}),
        Combination("a-2_b-x", {("server", "flags", "a"): (2, ("matrix", "a", 1)),
                                ("server", "flags", "b"): ("X", ("matrix", "b", "x"))}),
        Combination("a-2_b-y", {("server", "flags", "a"): (2, ("matrix", "a", 1)),
                                ("server", "flags", "b"): ("Y", ("matrix", "b", "y"))}),
    ]


def test_a_boolean_mapping_key_is_named_and_located_by_its_name():
    (on, off) = expand_matrix({"fa": {True: "on", False: "off"}}, fail, target)
    assert (on.name, off.name) == ("fa-on", "fa-off")
    assert on.values[("server", "flags", "fa")] == ("on", ("matrix", "fa", "on"))


def test_empty_axis_is_refused():
    with pytest.raises(ValueError, match=r"^matrix\.a: must be a non-empty list"):
        expand_matrix({"a": []}, fail, target)


# --- factors: one axis, several settings ----------------------------------------------------------

def keys(key: Any, at: tuple[Any, ...]) -> tuple[str, ...]:
    """A small stand-in for scenario._target: two server keys, one load key, else a flag."""
    if key == "flags":
        raise fail(at, "name the flag itself")
    return ("server", key) if key in ("draft_model", "docker") else ("load", key) if key == "users" else (
        "server", "flags", key)


DRAFTER = {"none": {}, "mtp": {"draft_model": "/m/mtp.gguf", "flags": {"spec-type": "draft-mtp", "draft-max": 4}}}
COVERS = ("server.draft_model", "server.flags.spec-type", "server.flags.spec-draft-n-max")
"""``draft-max`` is compared by its long name, ``spec-draft-n-max``."""
DRAFTER_KEYS = {("server", "draft_model"): "matrix.drafter", ("server", "flags", "spec-type"): "matrix.drafter",
                ("server", "flags", "draft-max"): "matrix.drafter"}


def test_a_factor_sets_several_settings_and_names_its_value():
    none, mtp = expand_matrix({"drafter": DRAFTER}, fail, keys)
    assert none == Combination("drafter-none", {}, {"drafter": Factor("none", COVERS)}, DRAFTER_KEYS)
    assert mtp == Combination("drafter-mtp", {
        ("server", "draft_model"): ("/m/mtp.gguf", ("matrix", "drafter", "mtp", "draft_model")),
        ("server", "flags", "spec-type"): ("draft-mtp", ("matrix", "drafter", "mtp", "flags", "spec-type")),
        ("server", "flags", "draft-max"): (4, ("matrix", "drafter", "mtp", "flags", "draft-max"))},
        {"drafter": Factor("mtp", COVERS)}, DRAFTER_KEYS)


def test_a_factor_crossed_with_a_single_setting():
    combos = expand_matrix({"flash-attn": [True, False], "drafter": DRAFTER}, fail, keys)
    assert [(c.name, c.values.get(("server", "flags", "flash-attn"), (None,))[0], c.factors["drafter"].value)
            for c in combos] == [("flash-attn-on_drafter-none", True, "none"),
                                 ("flash-attn-on_drafter-mtp", True, "mtp"),
                                 ("flash-attn-off_drafter-none", False, "none"),
                                 ("flash-attn-off_drafter-mtp", False, "mtp")]
    assert all(len(c.values) == 1 + 3 * (c.factors["drafter"].value == "mtp") for c in combos)


def test_an_axis_named_after_a_key_that_takes_a_mapping_stays_one_setting():
    small, big = expand_matrix({"docker": {"small": {"gpus": "all"}, "big": {"gpus": [0, 1]}}}, fail, keys)
    assert (small.factors, small.factor_keys) == ({}, {})
    assert small.values == {("server", "docker"): ({"gpus": "all"}, ("matrix", "docker", "small"))}
    assert big.values[("server", "docker")][0] == {"gpus": [0, 1]}


@pytest.mark.parametrize("raw, expected", [
    pytest.param({"drafter": {"none": None, "mtp": {"draft_model": "/m.gguf"}}},
                 "matrix.drafter.mtp: a llama-server flag takes no mapping; to set several settings at once make "
                 "every value of the axis a mapping of settings (a factor; {} for none)", id="mixed_values"),
    pytest.param({"drafter": [{}, {"draft_model": "/m.gguf"}]},
                 "matrix.drafter.0: cannot name the value {}; write the axis as a mapping {name: value}",
                 id="listed_factor_values"),
    pytest.param({"drafter": {"mtp": {"flags": ["spec-type"]}}},
                 "matrix.drafter.mtp.flags: must be a mapping of llama-server flags, e.g. {spec-type: draft-mtp}, "
                 "got ['spec-type']", id="flags_not_a_mapping"),
    pytest.param({"drafter": {"mtp": {"flags": {"users": 4}}}},
                 "matrix.drafter.mtp.flags.users: is a load key, not a llama-server flag; set it beside flags",
                 id="key_inside_flags"),
    pytest.param({"drafter": {"mtp": {"spec-type": {"a": 1}}}},
                 "matrix.drafter.mtp.spec-type: a llama-server flag takes no mapping", id="flag_mapping_value"),
    pytest.param({"drafter": {"mtp": {"spec-type": "a", "flags": {"spec-type": "b"}}}},
                 "matrix.drafter.mtp.flags.spec-type: is set twice in this value (also at "
                 "matrix.drafter.mtp.spec-type)", id="set_twice"),
    pytest.param({"spec-draft-n-max": [2, 4], "drafter": DRAFTER},
                 "matrix.drafter.mtp.flags.draft-max: is also set by the matrix axis matrix.spec-draft-n-max; "
                 "set it in one place", id="overlaps_an_axis_by_alias"),
    pytest.param({"drafter": DRAFTER, "draft": {"a": {"draft_model": "/a.gguf"}}},
                 "matrix.draft.a.draft_model: is also set by the matrix axis matrix.drafter; set it in one place",
                 id="two_factors_overlap"),
])
def test_factor_errors(raw: dict[str, Any], expected: str):
    with pytest.raises(ValueError) as info:
        expand_matrix(raw, fail, keys)
    assert str(info.value) == expected


def test_a_variants_factors_are_what_summary_json_carries():
    (_, mtp) = expand_matrix({"drafter": DRAFTER}, fail, keys)
    assert to_json(RunFacts(factors=mtp.factors))["factors"] == {"drafter": {"value": "mtp", "covers": list(COVERS)}}


# --- folding factors back (compare) ---------------------------------------------------------------

FOLDED = {"drafter": {"covers": ["server.draft_model", "server.flags.spec-type"], "values": ["none", "mtp"]}}


def variant(draft: str | None, fa: str, value: str = "") -> tuple[dict[str, Any], dict[str, Any]]:
    settings = {"server.draft_model": draft, "server.flags.flash-attn": fa,
                **({"server.flags.spec-type": "draft-mtp"} if draft else {})}
    return settings, ({"drafter": {"value": value, "covers": FOLDED["drafter"]["covers"]}} if value else {})


def test_fold_replaces_the_factors_keys_by_its_value_name():
    none, mtp = variant(None, "on", "none"), variant("/m.gguf", "on", "mtp")
    assert folded_factors([none, mtp]) == FOLDED
    assert fold(*mtp, FOLDED) == {"server.flags.flash-attn": "on", "factor.drafter": "mtp"}
    assert fold(*none, FOLDED) == {"server.flags.flash-attn": "on", "factor.drafter": "none"}


@pytest.mark.parametrize("variants", [
    pytest.param([variant(None, "on", "none"), variant("/m.gguf", "on")], id="one_variant_without_factors"),
    pytest.param([variant(None, "on", "none"), variant("/m.gguf", "on", "mtp"), variant(None, "off", "mtp")],
                 id="one_name_two_meanings"),
    pytest.param([], id="nothing_compared"),
])
def test_a_factor_that_does_not_fold_cleanly_is_compared_key_by_key(variants):
    assert folded_factors(variants) == {}
