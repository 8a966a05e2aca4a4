"""orchestrate/scenario/datasets.py: the load section's ``dataset`` / ``allow_truncated``, checked but not read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from orchestrate.errors import ScenarioError
from orchestrate.scenario.datasets import DATASET_KEYS, parse_dataset
from orchestrate.scenario.yamlsource import read_yaml
from tests.helpers import parse_text as parse
from tests.helpers import scenario_error as error_of


def _fields(text: str) -> dict[str, Any]:
    """``parse_dataset`` on the ``load:`` section of ``text``, its key paths under ``load``."""
    raw, check = read_yaml(text, Path("d.yaml"))
    return parse_dataset(check, raw.get("load") or {}, lambda *keys: ("load", *keys))


def _error(text: str) -> str:
    with pytest.raises(ScenarioError) as info:
        _fields(text)
    return str(info.value)


def test_defaults_are_synthetic_and_not_truncated() -> None:
    """No dataset keys: the generated synthetic set, and a cut-short file refused."""
    assert _fields("load: {}\n") == {"dataset": "synthetic", "allow_truncated": False}
    assert set(_fields("load: {}\n")) == set(DATASET_KEYS)


@pytest.mark.parametrize("name", ["synthetic", "synthetic:1", "synthetic:400", "synthetic-multiturn",
                                  "synthetic-multiturn:12", "sharegpt-v3", "data/my file.json",
                                  "/nowhere/that/exists.json"])
def test_names_that_pass_are_kept_as_written(name: str) -> None:
    """A path is not opened here (the files are read once per run, later), so a missing one still parses."""
    assert _fields(f"load: {{dataset: '{name}', allow_truncated: true}}\n") == {"dataset": name,
                                                                               "allow_truncated": True}


@pytest.mark.parametrize("value, shown", [
    ("synthetic:0", "'synthetic:0'"),
    ("synthetic:-3", "'synthetic:-3'"),
    ("synthetic:1.5", "'synthetic:1.5'"),
    ("synthetic-multiturn:x", "'synthetic-multiturn:x'"),
    ("''", "''"),
    ("7", "7"),
    ("", "None"),
    ("[a, b]", "['a', 'b']"),
])
def test_bad_dataset_names_its_line_and_the_forms_allowed(value: str, shown: str) -> None:
    """A count that is not a whole number >= 1, an empty name or a non-string is refused at its line."""
    message = _error(f"name: x\nload:\n  users: 2\n  dataset: {value}\n")
    assert message == ("d.yaml:4 load.dataset: must be a file path, 'sharegpt-v3', 'synthetic[:N]', "
                       f"'synthetic-multiturn[:N]' (N >= 1), 'random' or 'trace', got {shown}")


@pytest.mark.parametrize("value, shown", [("1", "1"), ("'true'", "'true'"), ("", "None")])
def test_allow_truncated_must_be_a_bool(value: str, shown: str) -> None:
    """``1`` or ``'true'`` is not taken as yes: the flag lets prompts come from a file cut short."""
    assert _error(f"load:\n  dataset: synthetic\n  allow_truncated: {value}\n") == (
        f"d.yaml:3 load.allow_truncated: must be true or false, got {shown}")


def test_a_variant_error_names_the_variant_line() -> None:
    """Through the scenario parse, the key path (``at``) points into the variant that set the bad name."""
    message = error_of("""\
        load: {dataset: synthetic:10}
        variants:
          - name: a
          - name: b
            load:
              dataset: synthetic:none
    """)
    assert message.startswith("study.yaml:6 variants.1.load.dataset: must be a file path")
    assert message.endswith("got 'synthetic:none'")


def test_a_variant_inherits_and_overrides_the_dataset() -> None:
    """The dataset keys merge like the rest of ``load:``."""
    a, b = parse("""\
        load: {dataset: synthetic:10, allow_truncated: true}
        variants:
          - name: a
          - name: b
            load: {dataset: sharegpt-v3}
    """).variants
    assert (a.load.dataset, a.load.allow_truncated) == ("synthetic:10", True)
    assert (b.load.dataset, b.load.allow_truncated) == ("sharegpt-v3", True)
