"""Scenario YAML → frozen ``Scenario``/``Variant`` dataclasses, validated once, here.

Stage: scenario. Every problem is one line: ``FILE:LINE key.path: message``. Nothing downstream
re-checks what this module checked.

A ``matrix:`` of axes expands into the cross product (times the listed ``variants``, if any). An
axis, like a key of ``on_load_failure.retry_with``, names a server key (``draft_model``), a load key
(``users``), a sampling key (``max_prompt_tokens``) or else a llama-server flag (``flash-attn``); a
matrix axis whose values are all mappings of such keys is a factor that sets several at once.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Any

from locustfiles.serverwatch import DEFAULT_LOST_AFTER_S
from orchestrate.errors import ScenarioError
from orchestrate.scenario.cost import parse_cost
from orchestrate.scenario.datasets import DATASET_KEYS, parse_dataset
from orchestrate.scenario.gates import Gate, parse_gate
from orchestrate.scenario.host_limits import parse_host_limits
from orchestrate.scenario.keypaths import Origin, merge_sections, put_path
from orchestrate.scenario.lengths import LENGTH_KEYS, parse_lengths
from orchestrate.scenario.matrix import Combination, apply_combination, expand_matrix
from orchestrate.scenario.pacing import MODE_KEYS, hide_stages, with_load_modes
from orchestrate.scenario.replay import REPLAY_KEYS, hide_think_time, parse_replay
from orchestrate.scenario.request import REQUEST_KEYS, parse_request
from orchestrate.scenario.search import parse_search
from orchestrate.scenario.settings import on_off
from orchestrate.scenario.slo import parse_slo
from orchestrate.scenario.spec import (
    DEFAULT_IMAGE,
    LAUNCHER_KINDS,
    SAMPLING_KEYS,
    SERVER_KEYS,
    LoadSpec,
    Scenario,
    ServerSpec,
    Variant,
)
from orchestrate.scenario.sweep import SWEEP_SETTINGS, extract_sweep
from orchestrate.scenario.trace import parse_trace
from orchestrate.scenario.tune import DEFAULT_SEARCH, tune_space
from orchestrate.scenario.until import parse_until
from orchestrate.scenario.yamlsource import Checker, read_yaml

LOAD_KEYS = {*DATASET_KEYS, "users", "spawn_rate", "num_prompts", "max_seconds", "max_tokens", "seed",
             "sampling", "cache_prompt", "read_timeout_s", "server_lost_after_s", *SWEEP_SETTINGS, *MODE_KEYS,
             *REPLAY_KEYS, *LENGTH_KEYS, "trace", *REQUEST_KEYS, "until"}

TOP_KEYS = {"name", "description", "server", "load", "variants", "matrix", "on_load_failure", "slo", "search",
            "repeats", "host_limits", "fail_if", "cost", "tune"}
VARIANT_KEYS = {"name", "server", "load", "on_load_failure", "slo", "search"}
FAILURE_KEYS = {"retry_with"}
_FLAG_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")
METRIC_NAME = re.compile(r"^[A-Za-z_:][A-Za-z0-9_:]*$")


def _set_target(key: str) -> tuple[str, ...]:
    """Where a matrix axis or retry key lands: a server key, a load key, a sampling key, else a flag."""
    if key in SERVER_KEYS:
        return ("server", key)
    if key in LOAD_KEYS:
        return ("load", key)
    if key in SAMPLING_KEYS:
        return ("load", "sampling", key)
    return ("server", "flags", key)


def _server(check: Checker, raw: dict[str, Any], at: Origin) -> ServerSpec:
    launcher = raw.get("launcher", "embedded")
    if not isinstance(launcher, str) or launcher not in LAUNCHER_KINDS:
        raise check.fail(at("launcher"), f"unknown launcher {launcher!r}; available: {', '.join(LAUNCHER_KINDS)}")
    raw_flags = raw.get("flags")
    flags = check.mapping(raw_flags, at("flags"), set(raw_flags) if isinstance(raw_flags, dict) else set())
    docker_opts = check.mapping(raw.get("docker"), at("docker"),
                                set(raw["docker"]) if isinstance(raw.get("docker"), dict) else set())
    for key in ("binary", "image", "host"):
        if key in raw and (not isinstance(raw[key], str) or not raw[key] or " " in raw[key]):
            raise check.fail(at(key), f"must be a non-empty string without spaces, got {raw[key]!r}")
    port = check.number(raw.get("port", 0), at("port"), int, 0)
    if port > 65535:
        raise check.fail(at("port"), f"must be <= 65535, got {port}")
    for key in ("model", "draft_model", "url"):
        if key in raw and not isinstance(raw[key], str) and not (key != "model" and raw[key] is None):
            raise check.fail(at(key), f"must be a string, got {raw[key]!r}")
    for key in LAUNCHER_KINDS[launcher].needs:
        if not raw.get(key):
            raise check.fail(at(key), f"launcher {launcher} needs {key}" + (": http://HOST:PORT (or pass --url)"
                                                                           if key == "url" else ""))
    extra = raw.get("metrics_extra", [])
    if not isinstance(extra, list) or not all(isinstance(n, str) and METRIC_NAME.match(n) for n in extra):
        raise check.fail(at("metrics_extra"), f"must be a list of Prometheus metric names (e.g. "
                                              f"[tgi_batch_current_max_tokens]), got {extra!r}")
    return ServerSpec(launcher=launcher, model=raw.get("model", "tiny"), draft_model=raw.get("draft_model"),
                      flags=dict(flags), url=raw.get("url"), binary=raw.get("binary", "llama-server"),
                      image=raw.get("image", DEFAULT_IMAGE), docker=dict(docker_opts),
                      host=raw.get("host", "127.0.0.1"), port=port, metrics_extra=tuple(extra),
                      ready_timeout_s=check.number(raw.get("ready_timeout_s", 300.0),
                                                   at("ready_timeout_s"), float, 0.1))


def _load(check: Checker, raw: dict[str, Any], at: Origin) -> LoadSpec:
    sampling = check.mapping(raw.get("sampling"), at("sampling"), SAMPLING_KEYS)
    for key, value in sampling.items():
        check.number(value, at("sampling", key), int, 0, optional=True)
    cache_prompt = raw.get("cache_prompt", True)
    if not isinstance(cache_prompt, bool):
        raise check.fail(at("cache_prompt"), f"must be true or false, got {cache_prompt!r}")
    n = check.number
    return with_load_modes(check, raw, at, LoadSpec(**parse_dataset(check, raw, at), users=n(raw.get("users", 32), at("users"), int, 1),
                    spawn_rate=n(raw.get("spawn_rate", raw.get("users", 32)), at("spawn_rate"), float, 0.01),
                    num_prompts=n(raw.get("num_prompts", 1000), at("num_prompts"), int, 1),
                    max_seconds=n(raw.get("max_seconds"), at("max_seconds"), float, 1, optional=True),
                    max_tokens=n(raw.get("max_tokens", 256), at("max_tokens"), int, 1),
                    seed=n(raw.get("seed", 0), at("seed"), int, 0),
                    sampling=dict(sampling), cache_prompt=cache_prompt,
                    read_timeout_s=n(raw.get("read_timeout_s", 600.0), at("read_timeout_s"), float, 0.1),
                    server_lost_after_s=n(raw.get("server_lost_after_s", DEFAULT_LOST_AFTER_S),
                                          at("server_lost_after_s"), float, 0.5),
                    warmup_prompts=n(raw.get("warmup_prompts", 0), at("warmup_prompts"), int, 0),
                    **parse_replay(check, raw, at), **parse_lengths(check, raw, at), **parse_trace(check, raw, at),
                    **parse_request(check, raw, at), until=_until(check, raw, at)))


def _until(check: Checker, raw: dict[str, Any], at: Origin) -> dict[str, float]:
    """``load.until`` (``scenario.until``); stages change the users on purpose and have no window to be precise in."""
    try:
        found = parse_until(raw.get("until"))
    except ValueError as exc:
        raise check.fail(at("until"), str(exc)) from None
    if found and "stages" in raw:
        raise check.fail(at("until"), "needs a steady-state window, and stages have none: drop until, or the stages")
    return found


def _target(check: Checker, key: Any, at: tuple[Any, ...]) -> tuple[str, ...]:
    """A matrix axis or retry key → where it lands; refuses what cannot be a key or a flag."""
    if key == "flags":
        raise check.fail(at, "name the flag itself (e.g. flash-attn: [on, off]), not flags")
    if not isinstance(key, str) or not (key in SERVER_KEYS | LOAD_KEYS | SAMPLING_KEYS or _FLAG_NAME.match(key)):
        raise check.fail(at, "must be a server key (draft_model, image, ...), a load key (users, max_tokens, ...) "
                             f"or a llama-server flag name (letters, digits, '-'), got {key!r}")
    return _set_target(key)


_Rule = dict[str, tuple[tuple[str, ...], Any]]
"""``retry_with`` key → (where it lands, value)."""


def _retry_targets(check: Checker, raw: Any, at: tuple[Any, ...]) -> _Rule | None:
    """``on_load_failure: {retry_with: {flash-attn: off}}`` → its keys resolved; None without a rule."""
    rule = check.mapping(raw, at, FAILURE_KEYS)
    if not rule:
        return None
    retry = rule.get("retry_with")
    if not isinstance(retry, dict) or not retry:
        raise check.fail(at + ("retry_with",), "must be a non-empty mapping of server keys or flags to use for "
                                               f"one more try, e.g. {{flash-attn: off}}, got {retry!r}")
    out: _Rule = {}
    for key, value in retry.items():
        to = _target(check, key, at + ("retry_with", key))
        if to[0] == "load":
            raise check.fail(at + ("retry_with", key), "a retry changes how the server is started; "
                                                       "load settings cannot be retried")
        out[key] = (to, value)
    return out


def parse_scenario(text: str, path: Path) -> Scenario:
    """Validate a scenario's text; ``path`` is used in messages and for relative dataset paths."""
    raw, check = read_yaml(text, path)
    top = check.mapping(raw, (), TOP_KEYS)
    name = top.get("name", path.stem)
    if not isinstance(name, str) or not name.replace("-", "").replace("_", "").isalnum():
        raise check.fail(("name",), f"must be letters, digits, '-' or '_', got {name!r}")
    tune, target = None, lambda key, at: _target(check, key, at)
    if "tune" in top:
        tune, combos = tune_space(check, top, target)
        top = {**top, "search": top.get("search") or DEFAULT_SEARCH}
    else:
        combos = expand_matrix(top["matrix"], check.fail, target) if "matrix" in top else [Combination("", {})]
    has_matrix = "matrix" in top or tune is not None
    top_rule = _retry_targets(check, top.get("on_load_failure"), ("on_load_failure",))
    raw_variants = top.get("variants", None)
    listed = raw_variants is not None
    if raw_variants is None:
        raw_variants = [{"name": "default"}]
    if not isinstance(raw_variants, list) or not raw_variants:
        raise check.fail(("variants",), "must be a non-empty list of {name, server, load} overrides")
    variants: list[Variant] = []
    names: list[str] = []
    for i, item in enumerate(raw_variants):
        at = ("variants", i)
        item = check.mapping(item, at, VARIANT_KEYS)
        vname = item.get("name")
        if not isinstance(vname, str) or not vname.replace("-", "").replace("_", "").isalnum():
            raise check.fail(at + ("name",), f"each variant needs a name of letters, digits, '-' or '_', got {vname!r}")
        if vname in names:
            raise check.fail(at + ("name",), f"duplicate variant name {vname!r}")
        names.append(vname)
        for section in ("server", "load"):
            check.mapping(item.get(section), at + (section,), SERVER_KEYS if section == "server" else LOAD_KEYS)
        rule, rule_at = ((_retry_targets(check, item["on_load_failure"], at + ("on_load_failure",)),
                          at + ("on_load_failure", "retry_with")) if "on_load_failure" in item
                         else (top_rule, ("on_load_failure", "retry_with")))
        for combo in combos:
            full = "_".join(part for part in (vname if listed or not has_matrix else "", combo.name) if part)
            if any(v.name == full for v in variants):
                raise check.fail(("matrix",), f"duplicate variant name {full!r} from the matrix")
            variants.append(_variant(check, full, top, item, at, combo, rule, rule_at))
    if tune is not None:
        if not LAUNCHER_KINDS[variants[0].server.launcher].starts_server:
            raise check.fail(("server", "launcher"), "a tune starts the server with each candidate's settings: use "
                                                     "launcher process, docker or embedded, not one already running")
        tune = replace(tune, points={v.name: combo.point for v, combo in zip(variants, combos)})
    return Scenario(name=name, path=path, description=str(top.get("description", "")),
                    variants=tuple(variants), repeats=check.number(top.get("repeats", 1), ("repeats",), int, 1),
                    host_limits=parse_host_limits(check, top.get("host_limits")), gates=_gates(check, top.get("fail_if")),
                    cost=parse_cost(check, top.get("cost")), tune=tune)


def _gates(check: Checker, raw: Any) -> tuple[Gate, ...]:
    """``fail_if:`` → its gates, each checked (``scenario.gates``)."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise check.fail(("fail_if",), f"must be a list of gates such as 'ttft_ms.p99 > 2000', got {raw!r}")
    gates = []
    for i, text in enumerate(raw):
        try:
            gates.append(parse_gate(text))
        except ValueError as exc:
            raise check.fail(("fail_if", i), str(exc)) from None
    return tuple(gates)


def _variant(check: Checker, name: str, top: dict[str, Any], item: dict[str, Any], at: tuple[Any, ...],
             combo: Combination, rule: _Rule | None, rule_at: tuple[Any, ...]) -> Variant:
    """Top level ← the listed variant ← the matrix combination, validated; then the retry rule over that."""
    sets, origins = apply_combination(combo, top, item, at, check.fail)
    server_raw = merge_sections(merge_sections(check.mapping(top.get("server"), ("server",), SERVER_KEYS), item.get("server") or {}),
                        sets["server"])
    load_raw = merge_sections(merge_sections(check.mapping(top.get("load"), ("load",), LOAD_KEYS), item.get("load") or {}),
                      sets["load"])
    server_at = Origin(item.get("server"), at + ("server",), top.get("server"), ("server",), origins["server"])
    load_at = Origin(item.get("load"), at + ("load",), top.get("load"), ("load",), origins["load"])
    server = _server(check, server_raw, server_at)
    retry_with = None
    if rule:  # validate the server as it would be retried, errors pointing at the rule's values
        retry_raw: dict[str, Any] = {}
        for key, (to, value) in rule.items():
            put_path(retry_raw, to[1:], value)
        retried = _server(check, merge_sections(server_raw, retry_raw),
                          server_at.also({to[1:]: rule_at + (key,) for key, (to, _) in rule.items()}))
        if replace(retried, flags=on_off(retried.flags)) != replace(server, flags=on_off(server.flags)):
            # a rule that changes nothing (flash-attn: off on an fa-off variant) is no rule
            retry_with = {key: getattr(retried, key) if key in SERVER_KEYS else retried.flags[key] for key in rule}
    first, sweep, steps = extract_sweep(check, hide_stages(hide_think_time(load_raw)), load_at)
    load = _load(check, first, load_at)
    slo = parse_slo(check, top.get("slo"), ("slo",), item.get("slo"), at + ("slo",))
    search = parse_search(check, top.get("search"), item.get("search"), at + ("search",), load, slo is not None,
                          sweep is not None)
    if load.until and (sweep is not None or search is not None):
        raise check.fail(at + ("load", "until") if "until" in (item.get("load") or {}) else ("load", "until"),
                         f"stops one run at a precision; a {'sweep' if sweep else 'capacity search'} runs many: drop "
                         "until here")
    return Variant(name, server, load, retry_with, sweep, tuple(_load(check, step, load_at) for step in steps),
                   slo=slo, factors=combo.factors, search=search)


def load_scenario(path: Path) -> Scenario:
    """Read and validate a scenario file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError(f"{path}: no such scenario file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(f"{path}: cannot read: {exc}") from None
    return parse_scenario(text, path)
