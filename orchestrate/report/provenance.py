"""The conditions of a result, its first lines: what was measured, on what, under which load.

Stage: report (formatting only; every value comes from ``summary.json``). A reader of a published result
needs, before any number: the model (name, file, size), the server (launcher, build, slots × context),
the load (users or rate, the time cap, the warm-up), the prompts (dataset, how many, seed, filters,
``max_tokens``) and the host. For a server tokenswarm did not start (``--url``) every server figure is
what the server reported, and says so: nothing comes from the scenario's ``server:`` section.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from orchestrate.report.formats import fmt_bytes, fmt_num
from orchestrate.scenario.spec import LAUNCHER_KINDS, RANDOM_DATASET

SAMPLING_LABELS = (("load.sampling.min_prompt_tokens", "prompt ≥ {} tokens"),
                   ("load.sampling.max_prompt_tokens", "prompt ≤ {} tokens"),
                   ("load.sampling.min_output_tokens", "reply ≥ {} tokens"),
                   ("load.sampling.max_total_tokens", "prompt + reply ≤ {} tokens"),
                   ("load.sampling.fixed_output_tokens", "every reply {} tokens"))


def _model(settings: dict[str, Any], facts: dict[str, Any], model: dict[str, Any], external: bool) -> str:
    path = facts.get("model_path") or facts.get("model_id")
    file_name = Path(path).name if path else None
    named = settings.get("server.reported.model") if external else settings.get("server.model")
    text = f"model: {named or file_name or 'unknown'}"
    details = [d for d in (file_name if file_name and file_name != named else None,
                           fmt_bytes(model["bytes"]) if model.get("bytes") else None) if d]
    draft = None if external else settings.get("server.draft_model")
    return (text + (f" ({', '.join(details)})" if details else "") + (f", draft model {draft}" if draft else "")
            + (" — as the server reported it" if external else ""))


def _server(settings: dict[str, Any], facts: dict[str, Any], external: bool) -> str:
    launcher = settings.get("server.launcher")
    text = (f"server: at {settings.get('server.url')}, not started by tokenswarm (its settings are unknown "
            "but for what it reports)" if external else f"server: {launcher} launcher")
    if facts.get("build"):
        text += f", build {facts['build']}"
    if facts.get("total_slots"):
        text += f", {facts['total_slots']} slots × {fmt_num(facts.get('per_slot_ctx'), 0)} ctx"
    flags = {k.removeprefix("server.flags."): v for k, v in settings.items() if k.startswith("server.flags.")}
    if flags and not external:
        text += "; flags " + " ".join(f"{k}={v}" for k, v in sorted(flags.items()))
    return text


def _load(summary: dict[str, Any], settings: dict[str, Any]) -> str:
    if settings.get("search.over"):
        low, high = settings["search.range"]
        text = (f"load: a capacity search over {settings['search.over']} from {low:g} to {high:g} (each probe a step: "
                f"{'open loop, at most ' + str(settings.get('load.users')) + ' in flight' if settings['search.over'] == 'rate' else 'closed loop'})")
    elif settings.get("load.rate") is not None:
        text = (f"load: open loop {fmt_num(settings['load.rate'], 2)} req/s ({settings.get('load.arrival')}), "
                f"at most {settings.get('load.users')} in flight")
    elif settings.get("load.stages"):
        text = "load: stages of " + " → ".join(str(s["users"]) for s in settings["load.stages"]) + " users"
    elif summary.get("users_over_time"):
        levels = " → ".join(str(x["users"]) for x in summary["users_over_time"]["levels"])
        text = f"load: users set in the web UI: {levels} (at most {summary['users_over_time']['max']}), closed loop"
    else:
        text = f"load: {settings.get('load.users')} users (concurrency), closed loop"
    cap = settings.get("load.max_seconds")
    text += f", time cap {fmt_num(cap, 0)} s" if cap else ", no time cap"
    warmup = (summary.get("warmup") or {}).get("prompts") or (summary.get("sweep") or {}).get("warmup_prompts")
    if warmup:
        text += f", after a warm-up of {warmup} prompts"
    repeat = summary.get("repeat")
    if repeat:
        text += f"; repeat {repeat['index']} of {repeat['of']} (server start {repeat['order']} of the run)"
    return text


def _prompts(summary: dict[str, Any], settings: dict[str, Any]) -> str:
    sampling = summary.get("sampling") or {}
    dataset = settings.get("load.dataset")
    where = sampling.get("dataset")
    count = summary.get("planned_prompts") if settings.get("search.over") else settings.get("load.num_prompts")
    eos = ", ignore_eos (every reply runs to max_tokens)" if settings.get("load.ignore_eos") else ""
    if dataset == RANDOM_DATASET:
        prefix = settings.get("load.prefix_tokens")
        return (f"prompts: {count} random, {settings.get('load.input_tokens')} tokens each as the server counts them"
                + (f" (the first {prefix} shared)" if prefix else "") + f", max_tokens {settings.get('load.output_tokens')}"
                + f"{eos}; text from {Path(where).name if where else 'unknown'}, seed {settings.get('load.seed')}")
    text = f"prompts: {count} from {dataset}"
    if where and Path(where).name != dataset:
        text += f" ({Path(where).name})"
    if sampling.get("complete_conversations"):
        text += f" of {sampling['complete_conversations']:,} conversations" + (
            " (a truncated file: its complete ones)" if sampling.get("truncated") else "")
    text += f", seed {settings.get('load.seed')}"
    filters = [label.format(settings[key]) for key, label in SAMPLING_LABELS if settings.get(key) is not None]
    text += (", " + ", ".join(filters)) if filters else ""
    return text + f", max_tokens {settings.get('load.max_tokens')}{eos}"


def _host(summary: dict[str, Any]) -> str | None:
    machine = summary.get("machine") or {}
    host = summary.get("host") or {}
    if not machine and not host:
        return None
    text = "host: " + (f"{machine.get('hostname')}, {machine.get('cpu_count')} CPUs" if machine else "this host")
    if host:
        text += " — busy while it ran (see the notes)" if host.get("busy") else " — quiet while it ran"
    return text


def condition_lines(summary: dict[str, Any]) -> list[str]:
    """The first lines of ``summary.md`` (and of the console): model, server, load, prompts, host;
    none for a summary written before settings were kept (nothing is invented)."""
    settings = summary.get("settings") or {}
    if not settings:
        return []
    facts = (summary.get("server") or {}).get("facts") or {}
    kind = LAUNCHER_KINDS.get(settings.get("server.launcher") or "")
    external = kind is not None and not kind.starts_server
    lines = [_model(settings, facts, summary.get("model") or {}, external), _server(settings, facts, external),
             _load(summary, settings), _prompts(summary, settings), _host(summary)]
    return [line for line in lines if line]
