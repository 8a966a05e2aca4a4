"""``matrix:`` → named combinations of settings: the cross product a scenario expands into.

Stage: scenario, a helper of ``orchestrate.scenario`` (which resolves axis keys and validates the
values). Imports: stdlib.

An axis is a list of values or a mapping ``{name: value}``. A listed value names itself: ``on``/``off``
for a boolean (YAML reads a bare ``on``/``off`` as one), ``none`` for null, the file stem for a path
(``/models/gemma-4-E4B-MTP.gguf`` → ``gemma-4-E4B-MTP``), else its text, with anything but letters,
digits, ``-`` and ``_`` replaced by ``-``. A combination is named ``<axis>-<value name>`` for each
axis, in the file's order, joined with ``_``: ``flash-attn-on_draft_model-mtp``.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

KeyPath = tuple[Any, ...]
Fail = Callable[[KeyPath, str], Exception]
"""Builds the one-line ``FILE:LINE key.path: message`` error for a key path."""
Target = Callable[[Any, KeyPath], tuple[str, ...]]
"""Resolves an axis key (checked) to where it lands: ``("server", "flags", "flash-attn")``."""

MAX_VARIANTS = 1000
"""A matrix larger than this is surely a mistake (and would take days to run)."""
_NOT_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]+")
_NAME = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True)
class Combination:
    """One point of the cross product."""

    name: str
    values: dict[tuple[str, ...], tuple[Any, KeyPath]]
    """Target (``("load", "users")``) → (value, the key path that wrote it, for error lines)."""


def value_name(value: Any) -> str | None:
    """The name a listed axis value gets; None when it cannot be named (a mapping, a list)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, (int, float)):
        text = str(value)
    elif isinstance(value, str):
        text = value.rstrip("/").rsplit("/", 1)[-1]
        if text.lower().endswith(".gguf"):
            text = text[:-len(".gguf")]
    else:
        return None
    return _NOT_NAME_CHARS.sub("-", text).strip("-") or None


def _key_name(key: Any) -> str | None:
    """The name written as a mapping key (``on:`` reads as True, ``32:`` as an int)."""
    if key is None or isinstance(key, (bool, int)):
        return value_name(key)
    return key if isinstance(key, str) and _NAME.match(key) else None


def _axis(values: Any, at: KeyPath, fail: Fail) -> list[tuple[str, Any, KeyPath]]:
    """``(value name, value, key path)`` for each value of one axis."""
    named: list[tuple[str, Any, KeyPath]] = []
    if isinstance(values, list) and values:
        for j, value in enumerate(values):
            name = value_name(value)
            if name is None:
                raise fail(at + (j,), f"cannot name the value {value!r}; write the axis as a mapping {{name: value}}")
            named.append((name, value, at + (j,)))
    elif isinstance(values, dict) and values:
        for key, value in values.items():
            name = _key_name(key)
            if name is None:
                raise fail(at + (key,), f"value names must be letters, digits, '-' or '_', got {key!r}")
            named.append((name, value, at + (key if isinstance(key, str) else name,)))
    else:
        raise fail(at, f"must be a non-empty list of values or a mapping {{name: value}}, got {values!r}")
    seen: dict[str, Any] = {}
    for name, value, where in named:
        if name in seen:
            raise fail(where, f"two values are both named {name!r} ({seen[name]!r} and {value!r}); "
                              "write the axis as a mapping {name: value}")
        seen[name] = value
    return named


def expand_matrix(raw: Any, fail: Fail, target: Target) -> list[Combination]:
    """Every combination of the axes, the first axis varying slowest."""
    if not isinstance(raw, dict) or not raw:
        raise fail(("matrix",), "must be a mapping of axes to their values, e.g. {flash-attn: [on, off]}")
    axes = []
    for axis, values in raw.items():
        at = ("matrix", axis)
        to = target(axis, at)  # checks the key first: it may not be a string
        axes.append((_NOT_NAME_CHARS.sub("-", axis), to, _axis(values, at, fail)))
    if math.prod(len(named) for _, _, named in axes) > MAX_VARIANTS:
        raise fail(("matrix",), f"expands to {math.prod(len(named) for _, _, named in axes)} variants; "
                                f"at most {MAX_VARIANTS}")
    return [Combination("_".join(f"{axis_name}-{name}" for (axis_name, _, _), (name, _, _) in zip(axes, picks)),
                        {to: (value, where) for (_, to, _), (_, value, where) in zip(axes, picks)})
            for picks in itertools.product(*(named for _, _, named in axes))]
