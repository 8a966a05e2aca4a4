"""The load section's length keys: ``dataset: random``'s ``input_tokens``, ``output_tokens`` and
``prefix_tokens``, and ``ignore_eos`` (replies that run to ``max_tokens``, any dataset).

Stage: scenario. ``scenario._load`` validates them here; ``orchestrate.load.fixedprompts`` builds the
prompts, ``locust_run`` sends ``--ignore-eos`` to Locust.
"""

from __future__ import annotations

from typing import Any, Callable

from orchestrate.scenario.spec import RANDOM_DATASET, LoadSpec, TokenLength
from orchestrate.scenario.yamlsource import Checker

LENGTH_KEYS = ("input_tokens", "output_tokens", "prefix_tokens", "ignore_eos")
RANDOM_ONLY = LENGTH_KEYS[:3]
LENGTH_FORMS = "a number of tokens, {min: A, max: B} (uniform) or {mean: M, stdev: S, min: A, max: B} (normal, clipped)"


def parse_lengths(check: Checker, raw: dict[str, Any], at: Callable[..., tuple[Any, ...]]) -> dict[str, Any]:
    """The length fields of ``LoadSpec`` from a merged load section, validated."""
    ignore_eos = raw.get("ignore_eos")
    if ignore_eos is not None and not isinstance(ignore_eos, bool):
        raise check.fail(at("ignore_eos"), f"must be true or false, got {ignore_eos!r}")
    if raw.get("dataset") != RANDOM_DATASET:
        for key in RANDOM_ONLY:
            if key in raw:
                raise check.fail(at(key), "only means something with dataset: random")
        return {"ignore_eos": ignore_eos}
    for key in ("sampling", "mode"):
        if raw.get(key) and raw.get(key) != "single":
            raise check.fail(at(key), "does not combine with dataset: random (its lengths are input_tokens and "
                                      "output_tokens; it has no conversations)")
    inputs = token_length(check, raw.get("input_tokens", 1024), at("input_tokens"))
    outputs = None if raw.get("output_tokens") is None else token_length(check, raw["output_tokens"],
                                                                         at("output_tokens"))
    prefix = check.number(raw.get("prefix_tokens", 0), at("prefix_tokens"), int, 0)
    problem = prefix_problem(prefix, inputs)
    if problem:
        raise check.fail(at("prefix_tokens"), problem)
    return {"input_tokens": inputs, "output_tokens": outputs, "prefix_tokens": prefix, "ignore_eos": ignore_eos}


def prefix_problem(prefix: int, inputs: TokenLength) -> str | None:
    """A shared prefix must leave every prompt some text of its own."""
    return f"must be below the shortest input ({inputs.min} tokens), got {prefix}" if prefix >= inputs.min else None


def token_length(check: Checker, value: Any, where: tuple[Any, ...]) -> TokenLength:
    """``200``, ``{min: 100, max: 300}`` or ``{mean: 200, stdev: 50, min: 100, max: 300}``."""
    if not isinstance(value, dict):
        return TokenLength.fixed(check.number(value, where, int, 1))
    check.mapping(value, where, {"min", "max", "mean", "stdev"})
    if "mean" in value:
        mean = check.number(value["mean"], where + ("mean",), float, 1)
        stdev = check.number(value.get("stdev", 0), where + ("stdev",), float, 0)
        low = check.number(value.get("min", 1), where + ("min",), int, 1)
        high = check.number(value.get("max", max(low, round(mean + 4 * stdev))), where + ("max",), int, 1)
    elif "min" in value and "max" in value and "stdev" not in value:
        mean, stdev = None, 0.0
        low, high = (check.number(value[k], where + (k,), int, 1) for k in ("min", "max"))
    else:
        raise check.fail(where, f"must be {LENGTH_FORMS}, got {value!r}")
    if low > high or (mean is not None and not low <= mean <= high):
        raise check.fail(where, f"needs min <= mean <= max, got {value!r}")
    return TokenLength(low, high, mean, stdev)


def length_arg(text: str) -> TokenLength:
    """``--input-tokens 200`` or ``100:300`` (uniform)."""
    low, sep, high = text.partition(":")
    try:
        length = TokenLength(int(low), int(high if sep else low))
    except ValueError:
        raise ValueError(f"must be N or MIN:MAX tokens, got {text!r}") from None
    if length.min < 1 or length.min > length.max:
        raise ValueError(f"must be N >= 1 or MIN:MAX with 1 <= MIN <= MAX, got {text!r}")
    return length


def override_problem(load: LoadSpec, overridden: set[str]) -> str | None:
    """What is wrong with a load section after the command line's overrides (``--dataset random`` on a
    multi-turn scenario, ``--input-tokens`` without it), in the flags' words; None when nothing is."""
    flags = [f"--{key.replace('_', '-')}" for key in RANDOM_ONLY if key in overridden]
    if load.dataset != RANDOM_DATASET:
        return f"{', '.join(flags)} only appl{'ies' if len(flags) == 1 else 'y'} with --dataset random" if flags else None
    if load.mode != "single" or load.sampling:
        return "--dataset random does not combine with the scenario's " + (
            f"mode: {load.mode}" if load.mode != "single" else "sampling limits")
    problem = prefix_problem(load.prefix_tokens, load.input_tokens)
    if problem:
        return f"--prefix-tokens {problem}"
    return None


def length_settings(load: LoadSpec) -> dict[str, Any]:
    """``Variant.settings`` entries: ``ignore_eos`` as sent, and ``random``'s lengths."""
    out: dict[str, Any] = {"load.ignore_eos": load.ignores_eos}
    if load.dataset == RANDOM_DATASET:
        out.update({"load.input_tokens": str(load.input_tokens),
                    "load.output_tokens": str(load.output_tokens or load.max_tokens),
                    "load.prefix_tokens": load.prefix_tokens})
    return out
