"""The command line that runs the locustfile: what ``tokenswarm run``, ``calibrate`` and the tests start.

Stage: load. The Locust side owns its flags (``options.py``), so it owns the line that passes them.
"""

from __future__ import annotations

import sys
from pathlib import Path

LOCUSTFILE = Path(__file__).parent / "locustfile.py"
"""What ``locust -f`` loads."""


def headless_command(users: int, spawn_rate: float, url: str, prompts: Path, num_prompts: int, records: Path,
                     locustfile: Path = LOCUSTFILE) -> list[str]:
    """The core of every headless ``locust`` run of a prompts file: the users, the server, the prompts and
    where the records go (``tokenswarm run`` and ``tokenswarm calibrate`` add their own flags). Each prompt
    carries its own ``max_tokens``, so ``--max-tokens`` (which caps a ``--dataset`` sampled at start) is not
    passed."""
    return [sys.executable, "-m", "locust", "-f", str(locustfile), "--headless", "-u", str(users),
            "-r", f"{spawn_rate:g}", "--host", url, "--prompts-file", str(prompts), "--num-prompts", str(num_prompts),
            "--records-file", str(records)]
