"""YAML text → plain data plus a key-path → line map, so every scenario error is ``FILE:LINE key.path: message``.

Stage: scenario, the reading half of ``orchestrate.scenario.parse``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from orchestrate.errors import ScenarioError


class Lines:
    """Key path → line number, from the YAML node tree, for error messages."""

    def __init__(self, node: yaml.Node | None) -> None:
        self.lines: dict[tuple[Any, ...], int] = {}
        self._walked: set[int] = set()
        if node is not None:
            self._walk(node, ())

    def _walk(self, node: yaml.Node, path: tuple[Any, ...]) -> None:
        self.lines[path] = node.start_mark.line + 1
        if id(node) in self._walked:  # an alias: walked at its anchor (and may contain itself)
            return
        self._walked.add(id(node))
        if isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                if not isinstance(key, yaml.ScalarNode):  # a complex key (safe_load refuses it): no path
                    continue
                self.lines[path + (key.value,)] = key.start_mark.line + 1
                self._walk(value, path + (key.value,))
                self.lines[path + (key.value,)] = key.start_mark.line + 1
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                self._walk(item, path + (i,))

    def line(self, path: tuple[Any, ...]) -> int | None:
        while path and path not in self.lines:
            path = path[:-1]
        return self.lines.get(path)


class Checker:
    """Builds one-line errors for key paths, and the checks every section shares."""

    def __init__(self, path: Path, lines: Lines) -> None:
        self.path, self.lines = path, lines

    def fail(self, key_path: tuple[Any, ...], message: str) -> ScenarioError:
        line = self.lines.line(key_path)
        where = f"{self.path}:{line}" if line else str(self.path)
        dotted = ".".join(str(k) if str(k).isprintable() else repr(k) for k in key_path) or "(top)"
        return ScenarioError(f"{where} {dotted}: {message}")

    def mapping(self, value: Any, key_path: tuple[Any, ...], allowed: set[str]) -> dict[str, Any]:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.fail(key_path, f"must be a mapping, got {type(value).__name__}")
        for key in value:
            if key not in allowed:
                raise self.fail(key_path + (key,), f"unknown key; allowed: {', '.join(sorted(allowed))}")
        return value

    def number(self, value: Any, key_path: tuple[Any, ...], kind: type, minimum: float,
               optional: bool = False) -> Any:
        if value is None and optional:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or (
                kind is int and not isinstance(value, int)):
            raise self.fail(key_path, f"must be {'an integer' if kind is int else 'a number'}, got {value!r}")
        if value < minimum:
            raise self.fail(key_path, f"must be >= {minimum:g}, got {value!r}")
        try:
            return kind(value)
        except OverflowError:
            raise self.fail(key_path, f"is too large, got {value!r}") from None


def _untagged(root: yaml.Node | None) -> tuple[tuple[Any, ...], yaml.ScalarNode] | None:
    """The first scalar whose explicit tag PyYAML cannot apply (``!!int x``), with its key path."""
    stack: list[tuple[tuple[Any, ...], yaml.Node | None]] = [((), root)]
    seen: set[int] = set()
    while stack:
        path, node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            try:
                yaml.SafeLoader("").construct_object(node)
            except (ValueError, TypeError, KeyError, IndexError, AttributeError, yaml.YAMLError):
                return path, node
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(reversed([(path + (i,), child) for i, child in enumerate(node.value)]))
        elif isinstance(node, yaml.MappingNode):
            stack.extend(reversed([(path + (key.value if isinstance(key, yaml.ScalarNode) else "?",), c)
                                   for key, value in node.value for c in (key, value)]))
    return None


def read_yaml(text: str, path: Path) -> tuple[Any, Checker]:
    """The document's data and a ``Checker`` for it; unreadable YAML is a one-line ``ScenarioError``."""
    node: yaml.Node | None = None
    try:
        node = yaml.compose(text)
        raw = yaml.safe_load(text)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        # PyYAML's constructors raise plain errors for a value that does not fit its explicit tag
        key_path, scalar = _untagged(node) or ((), None)
        tag = f"!!{scalar.tag.rsplit(':', 1)[-1]}" if scalar else "its tag"
        raise Checker(path, Lines(node)).fail(
            key_path, f"cannot read {scalar.value if scalar else 'a value'!r} as {tag}") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark else None
        if isinstance(exc, yaml.reader.ReaderError):  # a control character: no mark, a position
            line = text.count("\n", 0, exc.position) + 1
        where = f"{path}:{line}" if line else str(path)
        detail = str(getattr(exc, "problem", None) or exc).partition("\n")[0]
        raise ScenarioError(f"{where}: not valid YAML: {detail}") from None
    except RecursionError:
        raise ScenarioError(f"{path}: not valid YAML: nested too deeply") from None
    return raw, Checker(path, Lines(node))
