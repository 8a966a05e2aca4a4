"""What the tests of ``orchestrate/commands/`` share: a stand-in for the run loop, the one-line error check,
the flags of ``run`` parsed alone, and the scenarios and datasets they run."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import pytest

from orchestrate.commands.flags import add_run_arguments
from orchestrate.load.locust_run import Swarm, WebUi
from orchestrate.results import VariantPaths
from orchestrate.scenario.spec import Scenario
from orchestrate.server.preflight import API_KEY_ENV
from tests.helpers import ROOT

DEMO = ROOT / "scenarios" / "demo.yaml"


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("tokenswarm: error: ")
    return lines[0]


class FakeRunLoop:
    """Stands in for ``run_scenario``: records the scenario (and the API key the environment holds when it is
    called), writes one summary per variant, starts nothing."""

    def __init__(self) -> None:
        self.scenarios: list[Scenario] = []
        self.swarms: list[Swarm] = []
        self.uis: list[WebUi | None] = []
        self.resumes: list[Path | None] = []
        self.roots: list[Path] = []
        self.api_keys: list[str | None] = []
        self.detailed: list[bool] = []
        self.status = "completed"

    def __call__(self, scenario: Scenario, results_root: Path, swarm: Swarm = Swarm(),
                 ui: WebUi | None = None, resume: Path | None = None, detailed: bool = False) -> Path:
        self.resumes.append(resume)
        self.detailed.append(detailed)
        self.scenarios.append(scenario)
        self.swarms.append(swarm)
        self.uis.append(ui)
        self.roots.append(results_root)
        self.api_keys.append(os.environ.get(API_KEY_ENV))
        run = results_root / "run"
        for v in scenario.variants:
            paths = VariantPaths.create(run, v.name)
            paths.server_json.write_text("{}")
            paths.summary_json.write_text(json.dumps({"status": self.status}))
        return run


def args_of(*argv: str) -> argparse.Namespace:
    """``run``'s flags as parsed, without the rest of the command line."""
    parser = argparse.ArgumentParser()
    add_run_arguments(parser)
    return parser.parse_args(list(argv))


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return path


def truncated_dataset(tmp_path: Path) -> tuple[Path, int]:
    """A ShareGPT file cut inside its 7th entry (6 complete)."""
    data = [{"id": f"c{i}", "conversations": [{"from": "human", "value": "w " * 9},
                                              {"from": "gpt", "value": "w " * 9}]} for i in range(9)]
    text = json.dumps(data, indent=2)
    path = tmp_path / "cut.json"
    path.write_text(text[:len(json.dumps(data[:6], indent=2)) + 30])
    return path, 6


def three_variants(tmp_path: Path, dataset: Path, allow: bool = False) -> Path:
    scenario = tmp_path / "s.yaml"
    scenario.write_text(f"name: s\nload: {{dataset: '{dataset}', allow_truncated: {str(allow).lower()}}}\n"
                        "variants: [{name: a}, {name: b}, {name: c, load: {users: 2}}]\n")
    return scenario

