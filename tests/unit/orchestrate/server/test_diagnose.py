"""orchestrate/server/diagnose.py: cause and hint from server logs, including the reference study's abort."""

from __future__ import annotations

import pytest

from orchestrate.server.diagnose import diagnose, exit_meaning, failure_cause

FATTN_LOG = [
    "load_tensors: offloaded 43/43 layers to GPU",
    "llama_context: flash_attn = auto",
    "/app/ggml/src/ggml-cuda/fattn.cu:110: fatal error",
    "[New LWP 23]",
    "#0  0x00007f in ggml_abort () from /app/libggml-base.so",
]


def test_reference_study_flash_attention_abort() -> None:
    cause, hint = diagnose(FATTN_LOG, 134)
    assert cause == "/app/ggml/src/ggml-cuda/fattn.cu:110: fatal error"
    assert hint is not None and "flash-attn: off" in hint and "retry_with" in hint


@pytest.mark.parametrize("line, hint_part", [
    ("gguf_init_from_file: failed to open GGUF file '/models/x.gguf' (No such file or directory)", "does not exist"),
    ("gguf_init_from_reader: invalid magic characters: 'not ', expected 'GGUF'", "not a GGUF file"),
    ("ggml_backend_cuda_buffer_type_alloc_buffer: allocating 9000 MiB on device 0: cudaMalloc failed: out of memory",
     "ran out of memory"),
    ("error: invalid argument: --spec-type", "does not know one of the flags"),
    ("docker: Error response from daemon: could not select device driver \"\" with capabilities: [[gpu]]",
     "no GPU"),
    ("llama_model_load: error loading model: unknown model architecture: 'gemma9'", "architecture"),
])
def test_known_failures(line: str, hint_part: str) -> None:
    cause, hint = diagnose(["some startup line", line, "main: exiting due to model loading error"], 1)
    assert cause == line
    assert hint is not None and hint_part in hint


def test_timestamped_llama_lines_lose_their_prefix() -> None:
    assert diagnose(["0.00.105.000 E gguf_init_from_file: failed to open GGUF file 'x'"]).cause \
        == "gguf_init_from_file: failed to open GGUF file 'x'"


def test_unknown_failures_fall_back_to_the_first_error_line_or_the_exit_status() -> None:
    assert diagnose(["0.01.000.000 I ok", "0.01.000.001 E something odd", "0.01.000.002 E wrapper"]) \
        == ("something odd", None)
    assert diagnose([], -9).cause == "the server was killed (SIGKILL: out of memory?), without a log line saying why"
    assert diagnose([], 1) == (None, None)


@pytest.mark.parametrize("code, meaning", [(-6, "aborted (SIGABRT)"), (134, "aborted (SIGABRT)"),
                                           (137, "was killed (SIGKILL: out of memory?)"), (-11, "crashed (SIGSEGV)"),
                                           (-4, "died of an illegal instruction (SIGILL)"),
                                           (132, "died of an illegal instruction (SIGILL)"),
                                           (-7, "died of a bus error (SIGBUS)"), (136, "died of an arithmetic exception (SIGFPE)"),
                                           (0, None), (1, None), (None, None), (2, None), (128, None), (-64, None)])
def test_exit_meaning(code: int | None, meaning: str | None) -> None:
    assert exit_meaning(code) == meaning


def test_failure_cause_skips_traceback_frames() -> None:
    assert failure_cause(["Traceback (most recent call last):", '  File "x.py", line 1', "RuntimeError: boom"]) \
        == "RuntimeError: boom"


THREADPOOL = ["0.00.100.000 I load_tensors: loading model tensors", "init: llama threadpool init, n_threads = 1"]
"""The last lines of the build whose AMX code met a host that would not run it (issue 20)."""


@pytest.mark.parametrize("code", [-4, 132])
def test_an_illegal_instruction_is_the_cause_and_the_last_line_its_context(code: int) -> None:
    cause, hint = diagnose(THREADPOOL, code)
    assert cause == ("the server died of an illegal instruction (SIGILL): this binary uses CPU instructions "
                     "this host cannot run; last log line: init: llama threadpool init, n_threads = 1")
    assert hint is not None and "make llama-server" in hint and "portable" in hint


@pytest.mark.parametrize("report", ["Illegal instruction", "Illegal instruction (core dumped)",
                                    "/entry.sh: line 3:  1234 Illegal instruction     (core dumped) llama-server -m m"])
def test_a_wrapper_shells_report_of_the_signal_is_not_the_context(report: str) -> None:
    cause, _ = diagnose([*THREADPOOL, report], 132)
    assert cause is not None and cause.endswith("last log line: init: llama threadpool init, n_threads = 1")


def test_a_signal_outranks_a_known_failure_line_the_log_happens_to_hold() -> None:
    """A warning that matches a known failure is not why a server executed a bad instruction."""
    lines = ["warning: failed to open /sys/class/x: No such file or directory", "main: model loaded"]
    cause, hint = diagnose(lines, -4)
    assert cause is not None and cause.startswith("the server died of an illegal instruction (SIGILL)")
    assert cause.endswith("last log line: main: model loaded")
    assert hint is not None and "does not exist" not in hint
    bus, fpe = diagnose(lines, -7), diagnose([], 136)
    assert bus.cause is not None and "bus error (SIGBUS)" in bus.cause and "main: model loaded" in bus.cause
    assert bus.hint is not None and "truncated" in bus.hint
    assert fpe.cause == ("the server died of an arithmetic exception (SIGFPE): an integer division by zero inside "
                         "the server, without a log line saying why")


def test_an_abort_is_explained_by_its_log_else_named() -> None:
    assert diagnose(["x", "GGML_ASSERT(n > 0) failed"], -6).cause == "GGML_ASSERT(n > 0) failed"
    assert diagnose(["x", "0.00.001.000 I last words"], 134).cause == "the server aborted (SIGABRT); last log line: last words"
