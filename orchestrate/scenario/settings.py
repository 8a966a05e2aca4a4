"""A variant's settings, flat (``server.flags.flash-attn: off``): what defines the experiment.

Stage: scenario. The confound check (``compare.py``) and every result's ``summary.json`` compare
variants by these; they gather what the flag mapping, the load modes and the replay modes add, so
this module sits above those and the specs. It is the one module that owns the dotted names: it writes
them (``variant_settings``, ``ui_settings``) and reads a load back from them (``load_of``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from locustfiles.dataset import SamplingConfig
from locustfiles.pacing_params import Stage, default_spawn_rate
from orchestrate.scenario.flags import VALUE_SWITCHES, canonical_flag
from orchestrate.scenario.lengths import length_settings
from orchestrate.scenario.pacing import settings as mode_settings
from orchestrate.scenario.replay import replay_settings
from orchestrate.scenario.request import request_settings
from orchestrate.scenario.search import settings as search_settings
from orchestrate.scenario.spec import LAUNCHER_KINDS, RANDOM_DATASET, SAMPLING_KEYS, LoadSpec, Variant
from orchestrate.scenario.trace import trace_settings

SETTING_LOAD_KEYS = ("dataset", "users", "spawn_rate", "num_prompts", "max_seconds", "max_tokens", "seed",
                     "cache_prompt")
"""Load keys that define an experiment (``read_timeout_s`` does not); see ``settings``."""
UI_KEYS = ("users", "spawn_rate")
"""Load keys a person sets in Locust's web UI form."""


def on_off(flags: dict[str, Any]) -> dict[str, Any]:
    """Flags with the YAML booleans of on/off flags (``flash-attn: off``) written as ``on``/``off``."""
    return {flag: ("on" if value else "off") if flag in VALUE_SWITCHES and isinstance(value, bool) else value
            for flag, value in flags.items()}


def retry_description(variant: Variant) -> str:
    """``flash-attn=off`` for the retry rule (YAML booleans of on/off flags shown as on/off)."""
    return ", ".join(f"{k}=" + ("none" if v is None else ("on" if v else "off") if isinstance(v, bool)
                                and k in VALUE_SWITCHES else str(v)) for k, v in (variant.retry_with or {}).items())


def variant_settings(variant: Variant) -> dict[str, Any]:
    """Everything that defines the experiment, flat (``server.flags.flash-attn: off``): the confound check's input.

    Leaves out what does not change the measurement (timeouts, port, bind address); on/off flags
    are written ``on``/``off`` whether YAML read them as booleans or not; sampling limits that are
    not set show their defaults, so a default and the same value set explicitly are equal.
    """
    server, load = variant.server, variant.load
    out: dict[str, Any] = {"server.launcher": server.launcher}
    for field in LAUNCHER_KINDS[server.launcher].settings:  # an external server's are added after pre-flight
        if field == "flags":
            out.update({f"server.flags.{canonical_flag(flag)}": value for flag, value in on_off(server.flags).items()})
        elif field == "docker":
            out.update({f"server.docker.{k}": v for k, v in server.docker.items()})
        else:
            out[f"server.{field}"] = getattr(server, field)
    out.update({f"load.{key}": getattr(load, key) for key in SETTING_LOAD_KEYS
                if load.trace is None or key not in ("num_prompts", "max_tokens")})  # a trace's own
    out.update(trace_settings(load.trace))
    out.update(mode_settings(load))  # rate or stages, when set
    out.update(replay_settings(load))  # multi_turn's keys, when set
    out.update(length_settings(load))  # ignore_eos as sent; random's lengths
    out.update(request_settings(load))  # endpoint, constraint, tools, images, when not plain chat
    out.update(search_settings(variant.search))  # a capacity search: the loads it may try, what a pass is
    if variant.sweep is not None:  # the swept key is all of its values: variants compare step by step
        out[f"load.{variant.sweep.key}"] = list(variant.sweep.values)
    defaults = SamplingConfig()
    for key in sorted(SAMPLING_KEYS) if load.dataset != RANDOM_DATASET and load.trace is None else ():
        value = load.sampling.get(key)
        out[f"load.sampling.{key}"] = getattr(defaults, key) if value is None else value
    return out


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def load_of(settings: dict[str, Any]) -> LoadSpec | None:
    """The load a result ran, read back from its flat settings (``variant_settings``): for a folder whose
    ``run.json`` predates its ``load``. The keys the report reads come back (users, spawn rate, rate, arrival,
    burstiness, stages, ``ignore_eos`` as sent, and the scalar ``SETTING_LOAD_KEYS``); the rest keep their
    defaults. None for a result without one load: ``load.users`` not a whole number (a sweep's list, or no
    settings; a ramp's is its largest stage's), a swept ``load.rate``, a capacity search's variant
    (``search.over``)."""
    stages = _stages(settings.get("load.stages"))
    users = settings.get("load.users", max((stage.users for stage in stages), default=None))
    rate = settings.get("load.rate")
    if not isinstance(users, int) or isinstance(users, bool) or settings.get("search.over") or \
            not (rate is None or _number(rate)):
        return None
    load = LoadSpec(users=users, stages=stages)
    scalars = {key: settings[f"load.{key}"] for key in SETTING_LOAD_KEYS if key != "users"
               and f"load.{key}" in settings and not isinstance(settings[f"load.{key}"], list)}
    if rate is not None:
        scalars.update(rate=float(rate), arrival=settings.get("load.arrival", load.arrival))
        if _number(settings.get("load.burstiness")):
            scalars["burstiness"] = float(settings["load.burstiness"])
    if isinstance(settings.get("load.ignore_eos"), bool):
        scalars["ignore_eos"] = settings["load.ignore_eos"]
    return replace(load, **scalars)


def _stages(written: Any) -> tuple[Stage, ...]:
    """``load.stages`` as ``pacing.settings`` writes them; a stage without its spawn rate takes the parser's
    default."""
    stages: list[Stage] = []
    for stage in written if isinstance(written, list) else ():
        users = int(stage["users"])
        spawn = stage.get("spawn_rate")
        stages.append(Stage(float(stage.get("duration_s") or 0.0), users, float(spawn) if spawn is not None
                            else default_spawn_rate(users, stages[-1] if stages else None)))
    return tuple(stages)


def ui_settings(asked: LoadSpec, ran: LoadSpec) -> dict[str, Any]:
    """What a person changed in Locust's web UI form (``UI_KEYS``: the users, the spawn rate) of the load asked,
    as the settings entries of the load that ran."""
    return {f"load.{key}": getattr(ran, key) for key in UI_KEYS if getattr(ran, key) != getattr(asked, key)}
