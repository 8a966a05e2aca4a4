"""Scenario YAML → frozen ``Scenario``/``Variant`` dataclasses, validated once, here.

Stage: scenario. Imports: stdlib, yaml, ``orchestrate.errors``. Every problem is one line:
``FILE:LINE key.path: message``. Nothing downstream re-checks what this module checked.
"""

from __future__ import annotations

import copy
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from orchestrate.errors import ScenarioError

LAUNCHER_KINDS = ("embedded", "external")
"""Server kinds a scenario may name (docker and process arrive with the orchestrator issue)."""

SERVER_KEYS = {"launcher", "model", "draft_model", "flags", "ready_timeout_s", "url"}
LOAD_KEYS = {"dataset", "users", "spawn_rate", "num_prompts", "max_seconds", "max_tokens", "seed",
             "sampling", "cache_prompt", "read_timeout_s"}
SAMPLING_KEYS = {"min_prompt_tokens", "min_output_tokens", "max_prompt_tokens", "max_total_tokens",
                 "fixed_output_tokens"}
TOP_KEYS = {"name", "description", "server", "load", "variants"}
VARIANT_KEYS = {"name", "server", "load"}


@dataclass(frozen=True)
class ServerSpec:
    """How to obtain the server of a variant."""

    launcher: str = "embedded"
    model: str = "tiny"
    """A GGUF path, or ``tiny`` for the generated demo model."""
    draft_model: str | None = None
    """A GGUF path, ``tiny-draft`` for the generated draft, or None for no speculative decoding."""
    flags: dict[str, Any] = field(default_factory=dict)
    """llama-server flags by their long names (``parallel: 32``, ``flash-attn: off``)."""
    ready_timeout_s: float = 300.0
    url: str | None = None
    """Base URL of a server that is already running (``launcher: external``)."""


@dataclass(frozen=True)
class LoadSpec:
    """What load to send."""

    dataset: str = "synthetic"
    """A ShareGPT V3 JSON path, or ``synthetic`` for a generated file (``synthetic:N`` conversations)."""
    users: int = 32
    spawn_rate: float = 32.0
    num_prompts: int = 1000
    max_seconds: float | None = None
    max_tokens: int = 256
    seed: int = 0
    sampling: dict[str, int | None] = field(default_factory=dict)
    cache_prompt: bool = True
    read_timeout_s: float = 600.0


@dataclass(frozen=True)
class Variant:
    name: str
    server: ServerSpec
    load: LoadSpec


@dataclass(frozen=True)
class Scenario:
    name: str
    path: Path
    description: str
    variants: tuple[Variant, ...]

    def as_run(self) -> dict[str, Any]:
        """Every variant's settings after merging and overrides: ``scenario.yaml`` of a run."""
        return {"name": self.name, "description": self.description, "source": str(self.path),
                "variants": [asdict(v) for v in self.variants]}

    def with_overrides(self, server: dict[str, Any] | None = None,
                       load: dict[str, Any] | None = None) -> "Scenario":
        """Apply command-line overrides (``--url``, ``--users`` …) to every variant."""
        variants = tuple(replace(v, server=replace(v.server, **(server or {})),
                                 load=replace(v.load, **(load or {}))) for v in self.variants)
        return replace(self, variants=variants)


class _Lines:
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


class _Checker:
    def __init__(self, path: Path, lines: _Lines) -> None:
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


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = copy.deepcopy(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = copy.deepcopy(value)
    return merged


_MISSING = object()


class _Origin:
    """Key path of a merged setting: the variant's own section when it sets the key, else the top level's.

    Errors must point at the line that holds the bad value, not at the variant that inherited it.
    """

    def __init__(self, variant: Any, variant_at: tuple[Any, ...], top: Any, top_at: tuple[Any, ...]) -> None:
        self.sections = ((variant, variant_at), (top, top_at))

    def __call__(self, *keys: Any) -> tuple[Any, ...]:
        for section, prefix in self.sections:
            node = section
            for key in keys:
                node = node.get(key, _MISSING) if isinstance(node, dict) else _MISSING
            if section and node is not _MISSING:
                return prefix + keys
        (variant, variant_at), (_, top_at) = self.sections
        return (variant_at if variant else top_at) + keys


def _server(check: _Checker, raw: dict[str, Any], at: _Origin) -> ServerSpec:
    launcher = raw.get("launcher", "embedded")
    if launcher not in LAUNCHER_KINDS:
        raise check.fail(at("launcher"), f"unknown launcher {launcher!r}; available: {', '.join(LAUNCHER_KINDS)}")
    raw_flags = raw.get("flags")
    flags = check.mapping(raw_flags, at("flags"), set(raw_flags) if isinstance(raw_flags, dict) else set())
    for key in ("model", "draft_model", "url"):
        if key in raw and not isinstance(raw[key], str) and not (key != "model" and raw[key] is None):
            raise check.fail(at(key), f"must be a string, got {raw[key]!r}")
    if launcher == "external" and not raw.get("url"):
        raise check.fail(at("url"), "launcher external needs url: http://HOST:PORT (or pass --url)")
    return ServerSpec(launcher=launcher, model=raw.get("model", "tiny"), draft_model=raw.get("draft_model"),
                      flags=dict(flags), url=raw.get("url"),
                      ready_timeout_s=check.number(raw.get("ready_timeout_s", 300.0),
                                                   at("ready_timeout_s"), float, 0.1))


def _load(check: _Checker, raw: dict[str, Any], at: _Origin) -> LoadSpec:
    sampling = check.mapping(raw.get("sampling"), at("sampling"), SAMPLING_KEYS)
    for key, value in sampling.items():
        check.number(value, at("sampling", key), int, 0, optional=True)
    dataset = raw.get("dataset", "synthetic")
    synthetic_n = dataset.partition(":")[2] if isinstance(dataset, str) and dataset.startswith("synthetic:") else "1"
    if not isinstance(dataset, str) or not dataset or not synthetic_n.isdigit() or int(synthetic_n) < 1:
        raise check.fail(at("dataset"), f"must be a file path, 'synthetic' or 'synthetic:N' (N >= 1), got {dataset!r}")
    cache_prompt = raw.get("cache_prompt", True)
    if not isinstance(cache_prompt, bool):
        raise check.fail(at("cache_prompt"), f"must be true or false, got {cache_prompt!r}")
    n = check.number
    return LoadSpec(dataset=dataset, users=n(raw.get("users", 32), at("users"), int, 1),
                    spawn_rate=n(raw.get("spawn_rate", raw.get("users", 32)), at("spawn_rate"), float, 0.01),
                    num_prompts=n(raw.get("num_prompts", 1000), at("num_prompts"), int, 1),
                    max_seconds=n(raw.get("max_seconds"), at("max_seconds"), float, 1, optional=True),
                    max_tokens=n(raw.get("max_tokens", 256), at("max_tokens"), int, 1),
                    seed=n(raw.get("seed", 0), at("seed"), int, 0),
                    sampling=dict(sampling), cache_prompt=cache_prompt,
                    read_timeout_s=n(raw.get("read_timeout_s", 600.0), at("read_timeout_s"), float, 0.1))


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


def parse_scenario(text: str, path: Path) -> Scenario:
    """Validate a scenario's text; ``path`` is used in messages and for relative dataset paths."""
    node: yaml.Node | None = None
    try:
        node = yaml.compose(text)
        raw = yaml.safe_load(text)
    except (ValueError, TypeError, KeyError, IndexError, AttributeError):
        # PyYAML's constructors raise plain errors for a value that does not fit its explicit tag
        key_path, scalar = _untagged(node) or ((), None)
        tag = f"!!{scalar.tag.rsplit(':', 1)[-1]}" if scalar else "its tag"
        raise _Checker(path, _Lines(node)).fail(
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
    check = _Checker(path, _Lines(node))
    top = check.mapping(raw, (), TOP_KEYS)
    name = top.get("name", path.stem)
    if not isinstance(name, str) or not name.replace("-", "").replace("_", "").isalnum():
        raise check.fail(("name",), f"must be letters, digits, '-' or '_', got {name!r}")
    raw_variants = top.get("variants", None)
    if raw_variants is None:
        raw_variants = [{"name": "default"}]
    if not isinstance(raw_variants, list) or not raw_variants:
        raise check.fail(("variants",), "must be a non-empty list of {name, server, load} overrides")
    variants: list[Variant] = []
    for i, item in enumerate(raw_variants):
        at = ("variants", i)
        item = check.mapping(item, at, VARIANT_KEYS)
        vname = item.get("name")
        if not isinstance(vname, str) or not vname.replace("-", "").replace("_", "").isalnum():
            raise check.fail(at + ("name",), f"each variant needs a name of letters, digits, '-' or '_', got {vname!r}")
        if any(v.name == vname for v in variants):
            raise check.fail(at + ("name",), f"duplicate variant name {vname!r}")
        for section in ("server", "load"):
            check.mapping(item.get(section), at + (section,), SERVER_KEYS if section == "server" else LOAD_KEYS)
        server_raw = _merge(check.mapping(top.get("server"), ("server",), SERVER_KEYS), item.get("server") or {})
        load_raw = _merge(check.mapping(top.get("load"), ("load",), LOAD_KEYS), item.get("load") or {})
        server_at = _Origin(item.get("server"), at + ("server",), top.get("server"), ("server",))
        load_at = _Origin(item.get("load"), at + ("load",), top.get("load"), ("load",))
        variants.append(Variant(vname, _server(check, server_raw, server_at), _load(check, load_raw, load_at)))
    return Scenario(name=name, path=path, description=str(top.get("description", "")),
                    variants=tuple(variants))


def load_scenario(path: Path) -> Scenario:
    """Read and validate a scenario file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such scenario file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"{path}: cannot read: {exc}") from None
    return parse_scenario(text, path)
