"""orchestrate/matrix.py: value names and the cross product (validation is test_scenario's)."""

from __future__ import annotations

from typing import Any

import pytest

from orchestrate.matrix import Combination, expand_matrix, value_name


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
