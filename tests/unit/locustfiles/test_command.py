"""locustfiles/command.py: the headless ``locust`` command line means, to Locust, what it was built from.

The line is parsed by Locust's own parser with tokenswarm's flags added, as ``locust -f`` does; Locust
monkey-patches at import, so that runs in a fresh interpreter, as in test_webui.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from locustfiles.command import LOCUSTFILE, headless_command
from tests.helpers import ROOT

SCRIPT = r"""
import json, sys
from locust.argument_parser import get_parser
from locustfiles import conversations, options
parser = get_parser(default_config_files=[])
options.add_arguments(parser)
conversations.add_arguments(parser)
opts = parser.parse_args(json.loads(sys.argv[1]))
print(json.dumps({k: getattr(opts, k) for k in ("locustfile", "headless", "num_users", "spawn_rate", "host",
                                                "prompts_file", "num_prompts", "records_file")}))
"""


def locust_parses(argv: list[str]) -> dict[str, object]:
    proc = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(argv)], capture_output=True, text=True,
                          cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out: dict[str, object] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def test_locust_reads_the_line_back_as_given(tmp_path: Path) -> None:
    cmd = headless_command(users=12, spawn_rate=0.5, url="http://127.0.0.1:8080", prompts=tmp_path / "prompts.jsonl",
                           num_prompts=300, records=tmp_path / "out" / "requests.jsonl")
    assert cmd[:3] == [sys.executable, "-m", "locust"]  # this interpreter: the venv that has Locust
    assert locust_parses(cmd[3:]) == {
        "locustfile": str(LOCUSTFILE), "headless": True, "num_users": 12, "spawn_rate": 0.5,
        "host": "http://127.0.0.1:8080", "prompts_file": str(tmp_path / "prompts.jsonl"), "num_prompts": 300,
        "records_file": str(tmp_path / "out" / "requests.jsonl")}
    assert "--max-tokens" not in cmd, "each prompt carries its own max_tokens: the flag would do nothing"


def test_a_whole_spawn_rate_is_written_without_a_fraction(tmp_path: Path) -> None:
    cmd = headless_command(4, 4.0, "http://h:1", tmp_path / "p", 1, tmp_path / "r",
                           locustfile=tmp_path / "mine.py")
    assert cmd[cmd.index("-r") + 1] == "4" and cmd[cmd.index("-f") + 1] == str(tmp_path / "mine.py")


def test_the_default_locustfile_is_the_packaged_one() -> None:
    assert LOCUSTFILE == ROOT / "locustfiles" / "locustfile.py" and LOCUSTFILE.is_file()
