"""Why did the server die? The log tail and exit code → one cause line and a hint that says what to do.

Stage: server. Known llama.cpp failures are matched first (the reference study's flash-attention abort
with an MTP drafter among them); otherwise the first llama.cpp error line, else the last line that is
not a traceback frame.
"""

from __future__ import annotations

import re
import signal
from typing import NamedTuple

_LOG_LINE = re.compile(r"^\d+\.\d+\.\d+\.\d+ ([DIWE]) +(.*)$")  # llama.cpp: "0.00.006.716 E msg"

KNOWN_FAILURES: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(p, re.I), hint) for p, hint in (
    (r"ggml-cuda/fattn\.cu:\d+: fatal error",
     "the flash-attention CUDA kernel aborted at load: a known llama.cpp bug with MTP drafters "
     "(Gemma 4 E4B); set flash-attn: off, or on_load_failure: {retry_with: {flash-attn: off}}"),
    (r"out of memory|cudaMalloc failed|failed to allocate|unable to allocate",
     "the server ran out of memory: lower ctx-size or parallel, or offload fewer layers (n-gpu-layers)"),
    (r"could not select device driver|no CUDA-capable device|nvidia-container-cli",
     "the container got no GPU: install the NVIDIA container toolkit, or set docker: {gpus: none}"),
    (r"failed to open GGUF file|No such file or directory",
     "a model file does not exist at that path (for docker: inside the model folder that is mounted)"),
    (r"invalid magic characters|not a GGUF file|failed to read magic",
     "the model file is not a GGUF file"),
    (r"unknown model architecture|unsupported model architecture",
     "this llama.cpp build does not support the model's architecture: use a newer image or binary"),
    (r"error: invalid argument|unknown argument|unrecognized argument",
     "this llama-server does not know one of the flags: check server.flags against its --help"),
    (r"address already in use|couldn't bind",
     "the port is taken: set server.port: 0 for a free one"),
    (r"GGML_ASSERT|GGML_ABORT|fatal error|Aborted",
     "llama.cpp aborted on an internal check; the log tail shows where"),
))

SIGNAL_EXITS = {signal.SIGABRT: "aborted (SIGABRT)", signal.SIGKILL: "killed (SIGKILL: out of memory?)",
                signal.SIGSEGV: "crashed (SIGSEGV)", signal.SIGTERM: "terminated (SIGTERM)"}


class Diagnosis(NamedTuple):
    cause: str | None
    """The log line that says why (or the exit status when the log says nothing)."""
    hint: str | None
    """What to do about it, for the known failures."""


def exit_meaning(code: int | None) -> str | None:
    """``-6`` (Popen) or ``134`` (shell, docker) → ``aborted (SIGABRT)``."""
    if code is None or code in (0, 1):
        return None
    signum = -code if code < 0 else code - 128 if code > 128 else None
    try:
        return SIGNAL_EXITS.get(signal.Signals(signum)) if signum else None
    except ValueError:
        return None


def failure_cause(lines: list[str]) -> str | None:
    """The first llama.cpp error line (the root cause; later ones only wrap it), else the last
    non-blank line that is not part of a Python traceback's frames."""
    for line in lines:
        match = _LOG_LINE.match(line.strip())
        if match and match.group(1) == "E":
            return match.group(2).strip()
    for line in reversed(lines):
        text = line.strip()
        if text and not line.startswith(" ") and not text.startswith("Traceback"):
            match = _LOG_LINE.match(text)
            return match.group(2).strip() if match else text
    return None


def diagnose(lines: list[str], exit_code: int | None = None) -> Diagnosis:
    """Cause and hint from the server's log lines (oldest first) and its exit code."""
    for pattern, hint in KNOWN_FAILURES:
        for line in lines:
            if pattern.search(line):
                match = _LOG_LINE.match(line.strip())
                return Diagnosis(match.group(2).strip() if match else line.strip(), hint)
    cause = failure_cause(lines)
    meaning = exit_meaning(exit_code)
    if cause is None and meaning:
        cause = f"the server {meaning} without a log line saying why"
    return Diagnosis(cause, None)
