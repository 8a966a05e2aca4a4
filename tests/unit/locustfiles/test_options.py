"""locustfiles/options.py: tokenswarm's Locust flags, their defaults and types, on Locust's own parser too.

Most checks use a plain argparse parser. Locust's parser (configargparse, with its own flags and
``locust.conf``) must take them without a clash; Locust monkey-patches at import, so that check runs in
a fresh interpreter, as in test_webui.py.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pytest

from locustfiles import options
from locustfiles.resultfiles import RECORDS_FILE
from locustfiles.serverwatch import DEFAULT_LOST_AFTER_S
from tests.helpers import ROOT


def parse(*args: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    options.add_arguments(parser)
    return parser.parse_args(list(args))


def test_the_defaults_are_a_closed_loop_over_every_prompt() -> None:
    opts = parse()
    assert opts.prompts_file == "" and opts.dataset == "" and opts.num_prompts == 0
    assert opts.max_tokens == 256 and opts.records_file == RECORDS_FILE
    assert opts.rate == 0.0 and opts.arrival == "poisson" and opts.burstiness == 1.0 and opts.stages == ""
    assert opts.read_timeout == 600.0  # Locust's own 60 s would cut long prefills
    assert opts.server_lost_after == DEFAULT_LOST_AFTER_S and opts.exit_with_parent == 0
    assert opts.no_cache_prompt is False and opts.allow_truncated is False and opts.quit_on_stop is False
    assert opts.api_key_env == "TOKENSWARM_API_KEY"


def test_the_flags_are_parsed_to_their_types() -> None:
    opts = parse("--num-prompts", "12", "--max-tokens", "32", "--seed", "7", "--rate", "2.5", "--burstiness", "0.5",
                 "--arrival", "constant", "--late-ms", "25", "--read-timeout", "30", "--server-lost-after", "1.5",
                 "--exit-with-parent", "4242", "--no-cache-prompt", "--allow-truncated", "--quit-on-stop",
                 "--model", "m", "--join-token-file", "/t")
    assert (opts.num_prompts, opts.max_tokens, opts.seed, opts.exit_with_parent) == (12, 32, 7, 4242)
    assert (opts.rate, opts.burstiness, opts.late_ms, opts.read_timeout, opts.server_lost_after) == (
        2.5, 0.5, 25.0, 30.0, 1.5)
    assert opts.arrival == "constant" and opts.no_cache_prompt and opts.allow_truncated and opts.quit_on_stop
    assert opts.model == "m" and opts.join_token_file == "/t"


@pytest.mark.parametrize("args", [["--arrival", "uniform"], ["--num-prompts", "1.5"], ["--rate", "fast"]])
def test_a_bad_value_is_refused_by_the_parser(args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        parse(*args)
    assert exc.value.code == 2 and args[0] in capsys.readouterr().err


SCRIPT = r"""
import json, sys
from locust.argument_parser import get_parser
from locustfiles import conversations, options
parser = get_parser(default_config_files=[sys.argv[1]])
options.add_arguments(parser)
conversations.add_arguments(parser)
opts = parser.parse_args(["-u", "3", "--max-tokens", "64"])
print(json.dumps({"users": opts.num_users, "max_tokens": opts.max_tokens, "num_prompts": opts.num_prompts,
                  "rate": opts.rate, "records_file": opts.records_file, "no_cache_prompt": opts.no_cache_prompt}))
"""


def test_locusts_parser_takes_the_flags_and_reads_them_from_locust_conf(tmp_path: Path) -> None:
    conf = tmp_path / "locust.conf"
    conf.write_text("num-prompts = 40\nrate = 4\nmax-tokens = 16\nno-cache-prompt = true\n")
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(conf)], capture_output=True, text=True, cwd=ROOT,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"users": 3, "max_tokens": 64, "num_prompts": 40, "rate": 4.0, "records_file": RECORDS_FILE,
                   "no_cache_prompt": True}  # the command line wins over the file
