"""locustfiles/distributed.py: the master's ledger owes one request per turn of a conversation.

Run in a fresh interpreter: the module imports Locust, which must monkey-patch before ``requests``
(already imported by this test process).
"""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers import ROOT

SCRIPT = r"""
import json
from locustfiles.distributed import WorkerLedger
ledger = WorkerLedger()
ledger.hand("w1", [0, 0, 0, 1])   # conversation 0 (three turns) and a single prompt 1
ledger.hand("w2", [2])
ledger.returned_record("w1", 0)
ledger.returned_record("w1", 1)
ledger.returned_record("w2", 2)
owed = ledger.lose("w1")
print(json.dumps({"owed": owed, "ledger": ledger.to_json()}))
"""


def test_a_lost_worker_owes_the_turns_it_did_not_return() -> None:
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["owed"] == [0, 0]  # two turns of conversation 0: two requests the run must count done
    ledger = out["ledger"]
    assert (ledger["lost_in_flight"], ledger["lost_prompt_indices"]) == (2, {"w1": [0, 0]})
    assert ledger["records_by_worker"] == {"w1": 2, "w2": 1}
