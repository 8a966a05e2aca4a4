"""Scenario flags → ``llama-server`` arguments: the one mapping the docker and process launchers share.

Stage: scenario (a spec's flags → the server's argv, for the docker and process launchers and ``tokenswarm plan``). Flags are written by llama-server's own long names (``parallel: 32`` → ``--parallel
32``); a bare ``true`` is a switch (``cont-batching: true`` → ``--cont-batching``); short names work too
(``ngl: 99`` → ``-ngl 99``), ``false`` omits it, a list repeats the flag. YAML reads a bare
``on``/``off`` as a boolean, so ``flash-attn: off`` becomes ``--flash-attn off`` as intended.
"""

from __future__ import annotations

import re
from typing import Any

from orchestrate.scenario.spec import ServerSpec

FLAG_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9-]*$")
VALUE_SWITCHES = {"flash-attn", "fa"}
"""Flags whose value is on/off/auto: a YAML boolean is rendered as on/off, never as a bare switch."""
FLAG_ALIASES = {"fa": "flash-attn", "c": "ctx-size", "np": "parallel", "ngl": "n-gpu-layers",
                "gpu-layers": "n-gpu-layers", "t": "threads", "tb": "threads-batch", "cb": "cont-batching",
                "b": "batch-size", "ub": "ubatch-size", "ctk": "cache-type-k", "ctv": "cache-type-v",
                "ngld": "n-gpu-layers-draft", "gpu-layers-draft": "n-gpu-layers-draft",
                "draft-max": "spec-draft-n-max", "draft": "spec-draft-n-max", "draft-n": "spec-draft-n-max",
                "draft-min": "spec-draft-n-min", "kvu": "kv-unified", "sm": "split-mode", "ts": "tensor-split",
                "mg": "main-gpu", "dev": "device"}
"""Other names llama-server accepts for one flag (``common/arg.cpp``): the confound check compares
settings by the long name, so ``fa: off`` and ``flash-attn: off`` are the same setting."""
SHORT_NAMES = {"ngld", "ctkd", "ctvd", "devd", "hfrd", "cmoe", "cmoed", "ncmoe", "ncmoed", "nkvo", "nocb", "cram",
               "ctxcp", "fitc", "fitt", "mmdev", "ncffn", "no-kvu", "no-ag"}
"""llama-server's one-dash names of more than three letters (``-ngld``; build 11434's ``--help``)."""
RENAMED = {"draft": "spec-draft-n-max", "draft-n": "spec-draft-n-max", "draft-max": "spec-draft-n-max",
           "draft-min": "spec-draft-n-min", "draft-n-min": "spec-draft-n-min"}
"""Names current builds refuse ("the argument has been removed"): sent by their new name, which is
also the setting they are compared by."""
MANAGED = {"model", "m", "model-draft", "md", "host", "port", "metrics"}
"""Set by tokenswarm from the scenario's own keys (``model``, ``draft_model``, ``host``, ``port``)."""


def canonical_flag(flag: str) -> str:
    """The long name a flag is compared by (``fa`` → ``flash-attn``); unknown names as written."""
    return FLAG_ALIASES.get(flag, flag)


def _name(flag: str) -> str:
    """llama.cpp's short names have one dash: most have at most three letters (``-c``, ``-fa``,
    ``-ngl``), a few more (``SHORT_NAMES``)."""
    flag = RENAMED.get(flag, flag)
    return f"-{flag}" if flag in SHORT_NAMES or (len(flag) <= 3 and "-" not in flag) else f"--{flag}"


def flag_args(flags: dict[str, Any]) -> list[str]:
    """``{"parallel": 32, "flash-attn": False, "cont-batching": True}`` → llama-server argv.

    Arguments are a list (no shell ever sees them): a value is always one argument, and a flag name
    must look like one, so a scenario cannot smuggle in other flags or commands.
    """
    args: list[str] = []
    for flag, value in flags.items():
        if not FLAG_NAME.match(str(flag)):
            raise ValueError(f"server.flags.{flag}: not a llama-server flag name (letters, digits and '-')")
        if flag in MANAGED:
            raise ValueError(f"server.flags.{flag}: set it with the scenario's own key "
                             f"(model, draft_model, host, port); metrics are always on")
        if flag in VALUE_SWITCHES and isinstance(value, bool):
            value = "on" if value else "off"
        if value is True or value is None:
            args.append(_name(flag))
        elif value is False:
            continue
        elif isinstance(value, list):
            for item in value:
                args += [_name(flag), str(item)]
        else:
            args += [_name(flag), str(value)]
    return args


def llama_server_argv(spec: ServerSpec, model: str, draft_model: str | None, host: str, port: int) -> list[str]:
    """The arguments after the ``llama-server`` binary (paths as the server will see them)."""
    args = ["--model", model, "--host", host, "--port", str(port), "--metrics"]
    if draft_model:
        args += ["--model-draft", draft_model]
    return args + flag_args(spec.flags)
