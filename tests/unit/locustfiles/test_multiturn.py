"""locustfiles/multiturn.py: which user class ``--mode`` runs, and a user playing its conversations.

Locust monkey-patches at import and must come before ``requests``/``ssl``, which this test process
has already imported, so the checks run in a fresh interpreter (``SCRIPT``): it builds Locust
``Environment``s, replaces the HTTP request with a stand-in that records what would be sent, drives
one user's task by hand and prints what it saw as JSON. (The real thing, against the real server,
is tests/integration/test_multiturn_run.py.)
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

from tests.helpers import ROOT

SCRIPT = r"""
import json, time
from locust.argument_parser import get_parser
from locust.env import Environment
from locust.event import EventHook
from locustfiles.runstate import LlmRun
from locust.exception import StopUser
from locustfiles import conversations, options
from locustfiles.dataset import Prompt
from locustfiles.dispenser import PromptDispenser
from locustfiles.multiturn import MultiTurnUser, select_user_classes
from locustfiles.records import ERROR, OK
from locustfiles.sse import StreamResult
from locustfiles.users import ChatStreamUser

class Single(ChatStreamUser):
    host = "http://127.0.0.1:9"

class Multi(MultiTurnUser):
    host = "http://127.0.0.1:9"

parser = get_parser(default_config_files=[])
options.add_arguments(parser)
conversations.add_arguments(parser)
out = {}
for mode in ("single", "multi_turn"):
    env = Environment(user_classes=[Single, Multi], parsed_options=parser.parse_args(["--mode", mode]))
    select_user_classes(env)
    out[mode] = [c.__name__ for c in env.user_classes]
try:
    select_user_classes(Environment(user_classes=[Single], parsed_options=parser.parse_args(["--mode", "multi_turn"])))
except SystemExit as exc:
    out["no_class"] = str(exc)

sent = []
def fake_stream_chat(self, prompt, record):
    sent.append({"messages": [m["content"] for m in prompt.messages], "max_tokens": prompt.max_tokens,
                 "t": time.monotonic(), "collect": self.collect_text})
    failed = len(sent) == 2  # the second request fails: its reply is not known
    record.status = ERROR if failed else OK
    return None if failed else StreamResult(content=["reply", str(len(sent))])
ChatStreamUser.stream_chat = fake_stream_chat

def msgs(*texts):
    return tuple({"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(texts))
conv0 = Prompt(0, "c0", msgs("q0", "a0", "q1", "a1", "q2"), 30, 6, turns=((10, 4), (20, 5), (30, 6)))
conv1 = Prompt(1, "c1", msgs("p0"), 7, 3, turns=((7, 3),))

records = []
env = Environment(user_classes=[Multi], parsed_options=parser.parse_args(
    ["--mode", "multi_turn", "--history", "model", "--think-time", "0.05"]))
run = LlmRun(env)
run.record = EventHook()
run.record.add_listener(lambda record, **kw: records.append(
    {"conversation": record.conversation, "turn": record.turn, "prompt_index": record.prompt_index,
     "expected": record.expected_prompt_tokens, "max_tokens": record.max_tokens}))
run.dispenser = PromptDispenser([conv0, conv1], 0, lambda: None)
env.tokenswarm = run
user = Multi(env)
try:
    for _ in range(10):
        user.chat()
except StopUser:
    out["stopped"] = True
out["sent"] = sent
out["records"] = records
print(json.dumps(out))
"""


def run_script() -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_mode_picks_the_user_class_and_a_user_plays_each_conversation_in_order() -> None:
    out = run_script()
    assert out["single"] == ["Single"] and out["multi_turn"] == ["Multi"]
    assert "--mode multi_turn has no user class to run (selected: Single)" in out["no_class"]

    sent = out["sent"]
    assert [s["messages"] for s in sent] == [
        ["q0"],
        ["q0", "reply1", "q1"],  # history: model: the server's reply, not the dataset's a0
        ["q0", "reply1", "q1", "a1", "q2"],  # turn 1 failed: the dataset's reply stands in
        ["p0"],  # then the next conversation, from its first turn
    ]
    assert [s["max_tokens"] for s in sent] == [4, 5, 6, 3]
    assert [s["collect"] for s in sent] == [True, True, False, False]  # a reply is kept only for a later turn
    gaps = [b["t"] - a["t"] for a, b in zip(sent, sent[1:])]
    assert gaps[0] >= 0.05 and gaps[1] >= 0.05 and gaps[2] < 0.05  # think time between turns, not before a new one
    assert out["records"] == [
        {"conversation": "c0", "turn": 0, "prompt_index": 0, "expected": 10, "max_tokens": 4},
        {"conversation": "c0", "turn": 1, "prompt_index": 0, "expected": None, "max_tokens": 5},
        {"conversation": "c0", "turn": 2, "prompt_index": 0, "expected": None, "max_tokens": 6},
        {"conversation": "c1", "turn": 0, "prompt_index": 1, "expected": 7, "max_tokens": 3},
    ]
    assert out["stopped"] is True
