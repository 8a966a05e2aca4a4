"""Merging a scenario's sections and remembering where each merged value was written.

Stage: scenario. A variant's settings are the top level, then its own section, then a matrix combination
or a retry rule; an error about a merged value must still name the file line that holds it (``Origin``).
"""

from __future__ import annotations

import copy
from typing import Any


def merge_sections(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    """``override`` over ``base``, mappings merged key by key, values copied (neither is changed)."""
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = merge_sections(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


MISSING = object()


class Origin:
    """Key path of a merged setting: the variant's own section when it sets the key, else the top level's.

    Errors must point at the line that holds the bad value, not at the variant that inherited it.
    """

    def __init__(self, variant: Any, variant_at: tuple[Any, ...], top: Any, top_at: tuple[Any, ...],
                 overrides: dict[tuple[Any, ...], tuple[Any, ...]] | None = None) -> None:
        self.sections = ((variant, variant_at), (top, top_at))
        self.overrides = overrides or {}
        """Keys set by a matrix axis or a retry rule → the key path of the value that set them."""

    def also(self, overrides: dict[tuple[Any, ...], tuple[Any, ...]]) -> "Origin":
        """The same origin with more keys set elsewhere (a retry rule over a matrix combination)."""
        (variant, variant_at), (top, top_at) = self.sections
        return Origin(variant, variant_at, top, top_at, {**self.overrides, **overrides})

    def __call__(self, *keys: Any) -> tuple[Any, ...]:
        for set_keys, at in self.overrides.items():
            if keys[:len(set_keys)] == set_keys:
                return at + keys[len(set_keys):]
        for section, prefix in self.sections:
            node = section
            for key in keys:
                node = node.get(key, MISSING) if isinstance(node, dict) else MISSING
            if section and node is not MISSING:
                return prefix + keys
        (variant, variant_at), (_, top_at) = self.sections
        return (variant_at if variant else top_at) + keys


def get_path(section: Any, keys: tuple[Any, ...]) -> Any:
    """The value at ``keys`` in nested mappings, or ``MISSING``."""
    for key in keys:
        section = section.get(key, MISSING) if isinstance(section, dict) else MISSING
    return section


def put_path(section: dict[str, Any], keys: tuple[str, ...], value: Any) -> None:
    """Set the value at ``keys``, creating the mappings on the way."""
    for key in keys[:-1]:
        section = section.setdefault(key, {})
    section[keys[-1]] = value
