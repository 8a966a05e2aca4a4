"""Typed result files: dataclasses written as JSON, read back, checked and documented.

Stage: report. ``summary.json`` is one typed structure (``schema.Summary``): the aggregates compute its
blocks as dataclasses, and this module is the one bridge to the file. ``to_json`` writes a dataclass (its
fields in order, by their JSON names; a field made with ``omitted()`` is left out while it holds its default:
a block or key only some runs have); ``from_json`` reads one back
with pydantic, leniently (a key this version does not know is ignored, a missing one takes its default, so
older and newer files read) but never silently wrong (a value of the wrong type is a ``ResultsError``
naming its path); ``undeclared`` lists what a document holds that its type does not declare; ``schema``
walks a type's fields with their docstrings, which generate ``docs/results.md``. A field made with
``run_json_only()`` is kept in ``run.json`` alone: ``to_json`` writes it only when asked (``run_json=True``), and
the schema neither lists it nor reads it as a key of the document.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
import types
import typing
from collections.abc import Iterator
from dataclasses import MISSING, Field, dataclass, field, fields, is_dataclass
from functools import cache
from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

from orchestrate.errors import ResultsError

T = TypeVar("T")
OMIT = "omit"
"""Field metadata: leave the field out of the JSON while it holds its default (None, False, empty)."""
KEYS = "keys"
"""Field metadata of a mapping: what its keys are, for the documentation (``class`` → ``errors_by_class.<class>``)."""


def omitted(default: Any = None, keys: str | None = None) -> Any:
    """A field left out of the JSON while it holds ``default`` (a block or key only some runs have)."""
    metadata = {OMIT: True, **({KEYS: keys} if keys else {})}
    if isinstance(default, (dict, list)):
        return field(default_factory=type(default), metadata=metadata)
    return field(default=default, metadata=metadata)


RUN_JSON = "run_json"
"""Field metadata: a field of ``run.json`` only (what the run knew, for a rebuild), never a key of ``summary.json``."""


def run_json_only(default: Any = None) -> Any:
    """A field ``to_json`` writes only for ``run.json`` (``run_json=True``; left out there too while it holds
    ``default``) and the schema leaves out."""
    return field(default=default, metadata={RUN_JSON: True, OMIT: True})


KEYS_DOC = "keys_doc"
"""Field metadata of a mapping: what each of its keys is, for the documentation's ``<name>`` row."""


def mapping(keys: str, omit: bool = False, doc: str = "") -> Any:
    """A ``dict`` field whose keys are data (error classes, SLO keys, axes): ``keys`` names them in the docs,
    ``doc`` says what each key and its value are."""
    return field(default_factory=dict, metadata={KEYS: keys, **({OMIT: True} if omit else {}),
                                                 **({KEYS_DOC: doc} if doc else {})})


def _default(f: Field[Any]) -> Any:
    return f.default_factory() if f.default_factory is not MISSING else f.default


@dataclass(frozen=True)
class JsonField:
    """A dataclass field as the JSON has it: its key (a pydantic alias where the name is a Python keyword,
    ``from``), its type, and the dataclass field."""

    key: str
    type: Any
    field: Field[Any]


def documented(jf: JsonField) -> bool:
    """A key of the document (not a ``run_json_only`` field)."""
    return not jf.field.metadata.get(RUN_JSON)


@cache
def json_fields(cls: type) -> tuple[JsonField, ...]:
    """``cls``'s fields in order, by their JSON keys."""
    hints = typing.get_type_hints(cls, include_extras=True)
    out = []
    for f in fields(cls):
        tp, key = hints[f.name], f.name
        if typing.get_origin(tp) is typing.Annotated:
            key = next((m.alias for m in tp.__metadata__ if getattr(m, "alias", None)), key)
            tp = typing.get_args(tp)[0]
        out.append(JsonField(key, tp, f))
    return tuple(out)


_PLAIN = frozenset({int, float, str, bool, type(None)})


def to_json(value: Any, run_json: bool = False) -> Any:
    """A dataclass (and what it holds) as JSON values: its fields in order by their JSON keys, an omitted one
    left out while it holds its default, a ``run_json_only`` one unless ``run_json``."""
    if is_dataclass(value) and not isinstance(value, type):
        out = {}
        for jf in json_fields(type(value)):
            if jf.field.metadata.get(RUN_JSON) and not run_json:
                continue
            item = getattr(value, jf.field.name)
            if not (jf.field.metadata.get(OMIT) and item == _default(jf.field)):
                out[jf.key] = to_json(item, run_json)
        return out
    if isinstance(value, (list, tuple)):
        if all(type(v) in _PLAIN for v in value):  # a long list of numbers (a million prompt indices): as it is
            return list(value)
        return [to_json(v, run_json) for v in value]
    if isinstance(value, dict):
        return {k: to_json(v, run_json) for k, v in value.items()}
    return value


@cache
def _adapter(tp: Any) -> TypeAdapter[Any]:
    return TypeAdapter(tp)


def from_json(tp: type[T], data: Any, source: str = "") -> T:
    """``data`` (parsed JSON) as ``tp``; a value of the wrong type is one line naming ``source`` and the key."""
    try:
        return typing.cast(T, _adapter(typing.cast(Any, tp)).validate_python(data))
    except ValidationError as exc:
        error = exc.errors()[0]
        where = ".".join(str(part) for part in error["loc"])
        raise ResultsError(f"{source or tp.__name__}: {where}: {error['msg']}") from None


@dataclass(frozen=True)
class Entry:
    """One key of a typed document: its dotted path (``[]`` a list's items, ``<name>`` a mapping's keys)."""

    path: str
    type: str
    doc: str


def _args(tp: Any) -> tuple[Any, ...]:
    return typing.get_args(tp)


def _optional(tp: Any) -> Any:
    """``X | None`` → ``X`` (a union of several types stays as it is)."""
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        rest = [a for a in _args(tp) if a is not type(None)]
        return rest[0] if len(rest) == 1 else tp
    return tp


def _inner(tp: Any) -> tuple[str, Any] | None:
    """A container's items: (``[]``, item type) for a list or tuple, (``<>``, value type) for a dict."""
    tp = _optional(tp)
    origin = typing.get_origin(tp)
    if origin in (list, tuple) and _args(tp):
        return "[]", _args(tp)[0]
    if origin is dict and _args(tp):
        return "<>", _args(tp)[1]
    return None


@cache
def field_docs(cls: type) -> dict[str, str]:
    """Each field's docstring (the string right below it in the class body), through the class's bases."""
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if not is_dataclass(klass):
            continue
        body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0]
        assert isinstance(body, ast.ClassDef)
        for node, after in zip(body.body, body.body[1:]):
            if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and \
                    isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant) and \
                    isinstance(after.value.value, str):
                docs[node.target.id] = " ".join(after.value.value.split())
    return docs


def type_name(tp: Any) -> str:
    """How the docs name a field's type."""
    tp_ = _optional(tp)
    nullable = tp_ is not tp
    if is_dataclass(tp_):
        name = "object"
    elif (inner := _inner(tp_)) is not None:
        name = ("list of " if inner[0] == "[]" else "map to ") + type_name(inner[1])
    elif typing.get_origin(tp_) in (typing.Union, types.UnionType):
        name = " or ".join(type_name(a) for a in _args(tp_))
    else:
        name = {int: "int", float: "number", str: "string", bool: "bool"}.get(tp_, "any")
    return name + (" or null" if nullable else "")


def _field_keys(f: Field[Any]) -> str:
    return f"<{f.metadata.get(KEYS, 'key')}>"


def schema(cls: type, prefix: str = "") -> Iterator[Entry]:
    """Every key a document of ``cls`` may hold, depth first, with its type and docstring."""
    docs = field_docs(cls)
    for jf in filter(documented, json_fields(cls)):
        path = f"{prefix}{jf.key}"
        yield Entry(path, type_name(jf.type), docs.get(jf.field.name, ""))
        yield from _below(jf.type, path, _field_keys(jf.field), jf.field.metadata.get(KEYS_DOC, ""))


def _below(tp: Any, path: str, keys: str, keys_doc: str = "") -> Iterator[Entry]:
    tp = _optional(tp)
    if is_dataclass(tp):
        yield from schema(typing.cast(type, tp), f"{path}.")
    elif (inner := _inner(tp)) is not None:
        kind, item = inner
        if kind == "<>":  # a mapping's keys are data: one row stands for each
            yield Entry(f"{path}.{keys}", type_name(item), keys_doc or f"Each {keys.strip('<>')}.")
        yield from _below(item, f"{path}[]" if kind == "[]" else f"{path}.{keys}", "<key>")


def paths_of(cls: type, data: Any) -> set[str]:
    """The schema paths of every key ``data`` (parsed JSON) holds: ``[]`` a list's items, ``<name>`` a mapping's
    keys; a key ``cls`` does not declare is there too (so ``undeclared`` finds it; a ``run_json_only`` field's
    key among them, never looked into), as is ``path.{...}`` for a value holding keys where the type declares
    none."""
    out: set[str] = set()
    _collect(cls, data, "", out)
    return out


def undeclared(cls: type, data: Any) -> list[str]:
    """What ``data`` holds that ``cls`` does not declare."""
    return sorted(paths_of(cls, data) - {entry.path for entry in schema(cls)})


def _collect(cls: type, data: Any, prefix: str, out: set[str]) -> None:
    if not isinstance(data, dict):
        return
    by_key = {jf.key: jf for jf in json_fields(cls) if documented(jf)}
    for key, value in data.items():
        path = f"{prefix}{key}"
        out.add(path)
        if key in by_key:
            _collect_below(by_key[key].type, value, path, _field_keys(by_key[key].field), out)


def _collect_below(tp: Any, value: Any, path: str, keys: str, out: set[str]) -> None:
    tp = _optional(tp)
    if is_dataclass(tp):
        _collect(typing.cast(type, tp), value, f"{path}.", out)
        return
    inner = _inner(tp)
    if inner is None:
        if isinstance(value, dict) and value and tp is not Any:
            out.add(f"{path}.{{...}}")
        return
    kind, item = inner
    if kind == "[]" and isinstance(value, list):
        for v in value:
            _collect_below(item, v, f"{path}[]", "<key>", out)
    elif kind == "<>" and isinstance(value, dict):
        for v in value.values():
            out.add(f"{path}.{keys}")
            _collect_below(item, v, f"{path}.{keys}", "<key>", out)


def lookup(node: Any, path: str) -> Any:
    """The value at a dotted ``summary.json`` path (``latency_ms.ttft.p50``) of a typed block, None where any part
    is None: the page's tables, the gates and ``until`` read figures by their JSON names."""
    for part in path.split("."):
        node = getattr(node, part, None) if is_dataclass(node) else None
    return node
