"""orchestrate/scenario/yamlsource.py: YAML → data and the line of every key path, so a scenario error
is one line that points at ``FILE:LINE key.path``."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from orchestrate.errors import ScenarioError
from orchestrate.scenario.yamlsource import Checker, Lines, read_yaml

PATH = Path("study.yaml")
TEXT = textwrap.dedent("""\
    name: s
    server:
      flags:
        parallel: 4
    variants:
      - name: a
      - name: b
        load: {users: 2}
""")


def test_every_key_path_has_its_line() -> None:
    lines = Lines(yaml.compose(TEXT))
    assert lines.line(("name",)) == 1 and lines.line(("server", "flags", "parallel")) == 4
    assert lines.line(("variants", 1)) == 7 and lines.line(("variants", 1, "load", "users")) == 8
    assert lines.line(("server", "flags", "nope", "deeper")) == 3, "a missing key points at its parent"
    assert lines.line(()) == 1 and Lines(None).line(("x",)) is None


def test_a_key_is_placed_at_its_own_line_not_its_values() -> None:
    lines = Lines(yaml.compose("server:\n\n  flags:\n    a: 1\n"))
    assert lines.line(("server",)) == 1 and lines.line(("server", "flags")) == 3


def test_aliases_and_a_self_containing_node_do_not_loop() -> None:
    lines = Lines(yaml.compose("base: &b {users: 2}\nv: *b\nloop: &l [*l]\n"))
    assert lines.line(("v",)) == 2 and lines.line(("base", "users")) == 1


def test_an_error_names_the_file_line_and_dotted_path() -> None:
    _, check = read_yaml(TEXT, PATH)
    assert str(check.fail(("variants", 1, "load", "users"), "must be > 0")) == \
        "study.yaml:8 variants.1.load.users: must be > 0"
    assert str(check.fail((), "empty")) == "study.yaml:1 (top): empty"
    assert str(Checker(PATH, Lines(None)).fail(("a", "\x07"), "bad")) == "study.yaml a.'\\x07': bad"


def test_mapping_checks_type_and_keys() -> None:
    _, check = read_yaml(TEXT, PATH)
    assert check.mapping(None, ("server",), {"flags"}) == {}
    with pytest.raises(ScenarioError, match=r"^study\.yaml:4 server\.flags\.parallel: unknown key; allowed: a, b$"):
        check.mapping({"parallel": 4}, ("server", "flags"), {"b", "a"})
    with pytest.raises(ScenarioError, match=r"server: must be a mapping, got list"):
        check.mapping([1], ("server",), {"flags"})


@pytest.mark.parametrize("value, kind, message", [
    (True, int, "must be an integer, got True"), (1.5, int, "must be an integer, got 1.5"),
    ("3", float, "must be a number, got '3'"), (-1, int, "must be >= 0, got -1"),
    (float("inf"), int, "must be an integer, got inf"), (10 ** 400, float, "is too large"),
])
def test_number_checks(value: object, kind: type, message: str) -> None:
    _, check = read_yaml(TEXT, PATH)
    with pytest.raises(ScenarioError, match=message):
        check.number(value, ("load", "users"), kind, 0)


def test_numbers_that_pass() -> None:
    _, check = read_yaml(TEXT, PATH)
    assert check.number(3, ("x",), float, 0) == 3.0 and isinstance(check.number(3, ("x",), float, 0), float)
    assert check.number(None, ("x",), int, 0, optional=True) is None


@pytest.mark.parametrize("text, message", [
    ("a: [1\n", r"^study\.yaml:2: not valid YAML: expected ',' or '\]', but got '<stream end>'$"),
    ("a: 1\nb: \x07\n", r"^study\.yaml:2: not valid YAML: "),
    ("a:\n  b: !!int x\n", r"^study\.yaml:2 a\.b: cannot read 'x' as !!int$"),
    ("a:\n  - !!float y\n", r"^study\.yaml:2 a\.0: cannot read 'y' as !!float$"),
])
def test_unreadable_yaml_is_one_line_with_its_line(text: str, message: str) -> None:
    with pytest.raises(ScenarioError, match=message) as info:
        read_yaml(text, PATH)
    assert "\n" not in str(info.value)


def test_the_data_is_safe_loaded() -> None:
    raw, _ = read_yaml(TEXT, PATH)
    assert raw["variants"][1] == {"name": "b", "load": {"users": 2}}
    with pytest.raises(ScenarioError):
        read_yaml("a: !!python/object:os.system x\n", PATH)
