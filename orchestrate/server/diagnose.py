"""Why did the server die? The log tail and exit code → one cause line and a hint that says what to do.

Stage: server. A death by signal (an illegal instruction, a bus error, ...) is the cause, with the last
log line as context; llama.cpp's own aborts and plain exits are matched against known failures (the
reference study's flash-attention abort with an MTP drafter among them), else the first llama.cpp error
line, else the last line that is not a traceback frame.
"""

from __future__ import annotations

import re
import signal
from typing import NamedTuple

from orchestrate.errors import OUT_OF_MEMORY

_SHELL_REPORT = re.compile(r"^(\S+: (line )?\d+: *)?(\d+ +)?(Illegal instruction|Bus error|Floating point exception|"
                           r"Segmentation fault|Aborted|Killed)( +\(core dumped\))?( .*)?$")
_LOG_LINE = re.compile(r"^\d+\.\d+\.\d+\.\d+ ([DIWE]) +(.*)$")  # llama.cpp: "0.00.006.716 E msg"

KNOWN_FAILURES: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(p, re.I), hint) for p, hint in (
    (r"ggml-cuda/fattn\.cu:\d+: fatal error",
     "the flash-attention CUDA kernel aborted at load: a known llama.cpp bug with MTP drafters "
     "(Gemma 4 E4B); set flash-attn: off, or on_load_failure: {retry_with: {flash-attn: off}}"),
    (OUT_OF_MEMORY,
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



class SignalDeath(NamedTuple):
    meaning: str
    """What happened, as the words after "the server" (``died of an illegal instruction (SIGILL)``)."""
    explanation: str | None
    """What the signal says about the cause, where it says something by itself."""
    hint: str | None
    """What to do about it."""
    log_explains: bool = False
    """llama.cpp says why before it dies this way (its aborts): a known failure line is the cause."""


SIGNAL_DEATHS: dict[signal.Signals, SignalDeath] = {
    signal.SIGILL: SignalDeath(
        "died of an illegal instruction (SIGILL)",
        "this binary uses CPU instructions this host cannot run",
        "rebuild it on this host (`make llama-server` does), or use a portable build or image (one "
        "made without -march=native)"),
    signal.SIGBUS: SignalDeath(
        "died of a bus error (SIGBUS)",
        "it read mapped memory that is no longer there",
        "a model file truncated or replaced while the server had it mapped, or a full disk or /dev/shm: "
        "check the file's size and checksum and the free space"),
    signal.SIGFPE: SignalDeath(
        "died of an arithmetic exception (SIGFPE)",
        "an integer division by zero inside the server",
        "often a flag set to 0 that llama.cpp divides by (parallel, batch-size, ubatch-size, threads): "
        "check server.flags"),
    signal.SIGSEGV: SignalDeath("crashed (SIGSEGV)", None,
                                "a bug in the server or a damaged model file; the last log line shows where"),
    signal.SIGABRT: SignalDeath("aborted (SIGABRT)", None, None, log_explains=True),
    signal.SIGKILL: SignalDeath("was killed (SIGKILL: out of memory?)", None,
                                "the kernel's OOM killer (see `dmesg`) or another process ended it; "
                                "if memory, lower ctx-size or parallel"),
    signal.SIGTERM: SignalDeath("was terminated (SIGTERM)", None, None),
}
"""Deaths by signal that a server's exit code can show (``-4`` from Popen, ``132`` from a shell or docker)."""


class Diagnosis(NamedTuple):
    cause: str | None
    """The log line that says why (or the exit status when the log says nothing)."""
    hint: str | None
    """What to do about it, for the known failures."""


def signal_death(code: int | None) -> SignalDeath | None:
    """``-4`` (Popen) or ``132`` (shell, docker) → the SIGILL death; None for a plain exit."""
    if code is None or 0 <= code <= 128:
        return None
    try:
        return SIGNAL_DEATHS.get(signal.Signals(-code if code < 0 else code - 128))
    except ValueError:
        return None


def exit_meaning(code: int | None) -> str | None:
    """``-6`` (Popen) or ``134`` (shell, docker) → ``aborted (SIGABRT)``."""
    death = signal_death(code)
    return None if death is None else death.meaning


def failure_cause(lines: list[str]) -> str | None:
    """The first llama.cpp error line (the root cause; later ones only wrap it), else the last
    non-blank line that is not part of a Python traceback's frames."""
    for line in lines:
        match = _LOG_LINE.match(line.strip())
        if match and match.group(1) == "E":
            return match.group(2).strip()
    return last_line(lines)


def last_line(lines: list[str]) -> str | None:
    """The last non-blank line that is not a Python traceback frame, nor a shell's report of the
    signal itself (a wrapper script's ``Illegal instruction``), without llama.cpp's time prefix."""
    for line in reversed(lines):
        text = line.strip()
        if text and not line.startswith(" ") and not text.startswith("Traceback") \
                and not _SHELL_REPORT.match(text):
            match = _LOG_LINE.match(text)
            return match.group(2).strip() if match else text
    return None


def known_failure(lines: list[str]) -> Diagnosis | None:
    """The first of ``KNOWN_FAILURES`` the log shows: its line and hint."""
    for pattern, hint in KNOWN_FAILURES:
        for line in lines:
            if pattern.search(line):
                match = _LOG_LINE.match(line.strip())
                return Diagnosis(match.group(2).strip() if match else line.strip(), hint)
    return None


def diagnose(lines: list[str], exit_code: int | None = None) -> Diagnosis:
    """Cause and hint from the server's log lines (oldest first) and its exit code.

    A death by signal is the cause, with the last log line as context: the log of a server that
    executed an illegal instruction ends wherever it was, and that line is not why. Only llama.cpp's
    own aborts print why first, so there a known failure line stays the cause.
    """
    known = known_failure(lines)
    death = signal_death(exit_code)
    if death is None or (death.log_explains and known is not None):
        return known or Diagnosis(failure_cause(lines), None)
    said = f"the server {death.meaning}" + (f": {death.explanation}" if death.explanation else "")
    context = last_line(lines)
    cause = f"{said}; last log line: {context}" if context else f"{said}, without a log line saying why"
    return Diagnosis(cause, death.hint or (known.hint if known else None))
