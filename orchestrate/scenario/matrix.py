"""``matrix:`` → named combinations of settings: the cross product a scenario expands into.

Stage: scenario, a helper of ``orchestrate.scenario.parse`` (which resolves axis keys and validates the
values); its last part folds factors back for ``orchestrate.report.compare``.

An axis is a list of values or a mapping ``{name: value}``. A listed value names itself: ``on``/``off``
for a boolean (YAML reads a bare ``on``/``off`` as one), ``none`` for null, the file stem for a path
(``/models/gemma-4-E4B-MTP.gguf`` → ``gemma-4-E4B-MTP``), else its text, with anything but letters,
digits, ``-`` and ``_`` replaced by ``-``. A combination is named ``<axis>-<value name>`` for each
axis, in the file's order, joined with ``_``: ``flash-attn-on_draft_model-mtp``.

An axis is a **factor** when it is named like a flag but is not a server, load or sampling key, and
is written ``{name: settings}`` with every value a mapping of settings (``{}``: nothing set):
``drafter: {none: {}, mtp: {draft_model: …, flags: {spec-type: draft-mtp}}}``. No llama-server flag
takes a mapping, so the reading is never ambiguous; an axis named after a key (``docker``,
``sampling``) stays that one setting. A factor's keys resolve as axes do, ``flags:`` naming flags one
by one; no two axes may set one setting, and the top level may not set a factor's (its values that
leave it out would inherit it). The confound check reads a factor as one setting
(``orchestrate.report.compare``), so a drafter made of three settings is one cause, not three.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from orchestrate.scenario.flags import canonical_flag
from orchestrate.scenario.keypaths import MISSING, get_path, put_path
from orchestrate.scenario.spec import Factor

KeyPath = tuple[Any, ...]
Fail = Callable[[KeyPath, str], Exception]
"""Builds the one-line ``FILE:LINE key.path: message`` error for a key path."""
Target = Callable[[Any, KeyPath], tuple[str, ...]]
"""Resolves an axis key (checked) to where it lands: ``("server", "flags", "flash-attn")``."""
Sets = dict[tuple[str, ...], tuple[Any, KeyPath]]
"""Target (``("load", "users")``) → (value, the key path that wrote it, for error lines)."""

MAX_VARIANTS = 1000
"""A matrix larger than this is surely a mistake (and would take days to run)."""
_NOT_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]+")
_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
_NO_MAPPING = ("a llama-server flag takes no mapping; to set several settings at once make every value "
               "of the axis a mapping of settings (a factor; {} for none)")


@dataclass(frozen=True)
class Combination:
    """One point of the cross product."""

    name: str
    values: Sets
    factors: dict[str, Factor] = field(default_factory=dict)
    """Factor axis → its value in this combination."""
    factor_keys: dict[tuple[str, ...], str] = field(default_factory=dict)
    """Every target any value of a factor sets → that axis (``matrix.drafter``), for conflict errors."""
    point: tuple[int, ...] = field(default=(), compare=False)
    """Each axis's value as its index in the file's order: where a tune (``tune.space``) stands in the grid."""


@dataclass(frozen=True)
class _Axis:
    """One axis of the file, a single setting (each value sets one target) or a factor."""

    key: Any
    name: str
    values: list[tuple[str, Sets]]
    """(value name, what the value sets), in the file's order."""
    factor: bool

    def targets(self) -> list[tuple[str, ...]]:
        return list(dict.fromkeys(to for _, sets in self.values for to in sets))


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


def settings_key(to: tuple[str, ...]) -> str:
    """The ``settings.variant_settings`` key a target is compared by: a flag by its long name."""
    return ".".join((*to[:2], canonical_flag(to[2])) if to[:2] == ("server", "flags") else to)


def _key_name(key: Any) -> str | None:
    """The name written as a mapping key (``on:`` reads as True, ``32:`` as an int)."""
    if key is None or isinstance(key, (bool, int)):
        return value_name(key)
    return key if isinstance(key, str) and _NAME.match(key) else None


def _named(values: Any, at: KeyPath, fail: Fail) -> list[tuple[str, Any, KeyPath]]:
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


def _factor_value(value: dict[Any, Any], at: KeyPath, fail: Fail, target: Target) -> Sets:
    """What one value of a factor sets; ``flags: {spec-type: draft-mtp}`` names each flag."""
    entries: list[tuple[Any, Any, KeyPath, bool]] = []
    for key, setting in value.items():
        if key != "flags":
            entries.append((key, setting, at + (key,), False))
        elif isinstance(setting, dict):
            entries += [(flag, v, at + ("flags", flag), True) for flag, v in setting.items()]
        else:
            raise fail(at + ("flags",), f"must be a mapping of llama-server flags, e.g. {{spec-type: draft-mtp}}, "
                                        f"got {setting!r}")
    out: Sets = {}
    for key, setting, where, in_flags in entries:
        to = target(key, where)
        if in_flags and to != ("server", "flags", key):
            raise fail(where, f"is a {to[0]} key, not a llama-server flag; set it beside flags")
        if to[:2] == ("server", "flags") and isinstance(setting, dict):
            raise fail(where, "a llama-server flag takes no mapping")
        if to in out:
            raise fail(where, f"is set twice in this value (also at {'.'.join(map(str, out[to][1]))})")
        out[to] = (setting, where)
    return out


def _axis(key: Any, values: Any, fail: Fail, target: Target, root: KeyPath) -> _Axis:
    """One axis, a single setting or a factor, with what each of its values sets."""
    at = (*root, key)
    to = target(key, at)  # checks the key first: it may not be a string
    named = _named(values, at, fail)
    maps = [isinstance(value, dict) for _, value, _ in named]
    factor = to == ("server", "flags", key) and isinstance(values, dict) and all(maps)
    if to[:2] == ("server", "flags") and any(maps) and not factor:
        raise fail(named[maps.index(True)][2], _NO_MAPPING)
    return _Axis(key, _NOT_NAME_CHARS.sub("-", key), [
        (name, _factor_value(value, where, fail, target) if factor else {to: (value, where)})
        for name, value, where in named], factor)


def _refuse_overlaps(axes: list[_Axis], fail: Fail) -> None:
    """Two axes may not set one setting (a factor's ``spec-draft-n-max`` and a ``spec-draft-n-max`` axis)."""
    owner: dict[str, Any] = {}  # settings key (a flag by its long name) → the axis that sets it
    for axis in axes:
        for _, sets in axis.values:
            for to, (_, where) in sets.items():
                key = settings_key(to)
                other = next((o for k, o in owner.items()
                              if k == key or k.startswith(key + ".") or key.startswith(k + ".")), None)
                if other is not None:
                    raise fail(where, f"is also set by the matrix axis matrix.{other}; set it in one place")
        owner.update({settings_key(to): axis.key for to in axis.targets()})


def _axes(raw: Any, fail: Fail, target: Target, root: KeyPath) -> list[_Axis]:
    """The axes of ``raw`` (at key path ``root``), each checked, none setting what another sets."""
    if not isinstance(raw, dict) or not raw:
        raise fail(root, "must be a mapping of axes to their values, e.g. {flash-attn: [on, off]}")
    axes = [_axis(key, values, fail, target, root) for key, values in raw.items()]
    _refuse_overlaps(axes, fail)
    if math.prod(len(axis.values) for axis in axes) > MAX_VARIANTS:
        raise fail(root, f"expands to {math.prod(len(axis.values) for axis in axes)} variants; at most {MAX_VARIANTS}")
    return axes


def axis_values(raw: Any, fail: Fail, target: Target, root: KeyPath = ("matrix",)) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Each axis's name and its values' names, in the file's order (a tune's grid, ``Combination.point``'s indices)."""
    return tuple((axis.name, tuple(name for name, _ in axis.values)) for axis in _axes(raw, fail, target, root))


def expand_matrix(raw: Any, fail: Fail, target: Target, root: KeyPath = ("matrix",)) -> list[Combination]:
    """Every combination of the axes, the first axis varying slowest; ``root``: where they are written
    (``matrix``, or a tune's ``tune.space``)."""
    axes = _axes(raw, fail, target, root)
    covers = {axis.name: tuple(dict.fromkeys(map(settings_key, axis.targets()))) for axis in axes if axis.factor}
    factor_keys = {to: ".".join(map(str, (*root, axis.key))) for axis in axes if axis.factor for to in axis.targets()}
    return [Combination("_".join(f"{axis.name}-{axis.values[i][0]}" for axis, i in zip(axes, point)),
                        {to: set_at for axis, i in zip(axes, point) for to, set_at in axis.values[i][1].items()},
                        {axis.name: Factor(axis.values[i][0], covers[axis.name]) for axis, i in zip(axes, point)
                         if axis.factor}, factor_keys, point)
            for point in itertools.product(*(range(len(axis.values)) for axis in axes))]


def apply_combination(combo: Combination, top: dict[str, Any], item: dict[str, Any], at: KeyPath,
                      fail: Fail) -> tuple[dict[str, dict[str, Any]], dict[str, dict[KeyPath, KeyPath]]]:
    """The combination as ``server``/``load`` overrides, and the key path each came from (for error lines).

    A setting of the combination that the listed variant also sets is refused: it would be set in two
    places. So is a factor's setting that the top level sets: the factor's values that leave it out
    would inherit it silently (the bug of a ``spec-type`` set for every variant of a drafter study).
    """
    sets: dict[str, dict[str, Any]] = {"server": {}, "load": {}}
    origins: dict[str, dict[KeyPath, KeyPath]] = {"server": {}, "load": {}}
    for to, (value, value_at) in combo.values.items():
        if get_path(item.get(to[0]), to[1:]) is not MISSING:
            raise fail(at + to, f"is also a matrix axis ({'.'.join(map(str, value_at[:2]))}); set it in one place")
        put_path(sets[to[0]], to[1:], value)
        origins[to[0]][to[1:]] = value_at
    for to, axis in combo.factor_keys.items():
        if get_path(item.get(to[0]), to[1:]) is not MISSING:
            raise fail(at + to, f"is also set by the factor {axis}; set it in one place")
        if get_path(top.get(to[0]), to[1:]) is not MISSING:
            raise fail(to, f"is also set by the factor {axis}, whose values that leave it out would inherit "
                           "it; set it in the factor's values")
    return sets, origins


# --- reading factors back (orchestrate.report.compare, from summary.json files alone) ---------------------

FACTOR = "factor."
"""Prefix of the one setting a folded factor's keys become (``factor.drafter``)."""


def _covered(settings: dict[str, Any], covers: list[str]) -> dict[str, Any]:
    return {k: v for k, v in settings.items() if any(k == c or k.startswith(c + ".") for c in covers)}


def folded_factors(variants: list[tuple[dict[str, Any], dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """(settings, ``factors`` record) of each variant compared → axis → ``{covers, values}`` of those that fold.

    A factor folds into one setting only when every variant declares it alike and each value name
    stands for one set of settings among them (not after a retry that changed one of its keys, nor
    across runs of an edited scenario); otherwise its keys are compared one by one, as before factors
    existed: never wrong, only less grouped.
    """
    out: dict[str, dict[str, Any]] = {}
    for axis, declared in (variants[0][1] if variants else {}).items():
        covers = declared.get("covers") or []
        meaning: dict[Any, dict[str, Any]] = {}  # value name → the settings it stands for
        for settings, factors in variants:
            mine = factors.get(axis) or {}
            if mine.get("covers") != covers or meaning.setdefault(
                    mine.get("value"), _covered(settings, covers)) != _covered(settings, covers):
                break
        else:
            out[axis] = {"covers": covers, "values": list(meaning)}
    return out


def fold(settings: dict[str, Any], factors: dict[str, Any], folded: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """``settings`` with each folded factor's keys replaced by ``factor.<axis>: <value name>``."""
    mine = [axis for axis in folded if axis in factors]
    covered = {k for axis in mine for k in _covered(settings, folded[axis]["covers"])}
    return {**{k: x for k, x in settings.items() if k not in covered},
            **{FACTOR + axis: factors[axis]["value"] for axis in mine}}
