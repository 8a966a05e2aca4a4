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
    assert diagnose([], -9) == ("the server killed (SIGKILL: out of memory?) without a log line saying why", None)
    assert diagnose([], 1) == (None, None)


@pytest.mark.parametrize("code, meaning", [(-6, "aborted (SIGABRT)"), (134, "aborted (SIGABRT)"),
                                           (137, "killed (SIGKILL: out of memory?)"), (-11, "crashed (SIGSEGV)"),
                                           (0, None), (1, None), (None, None), (2, None)])
def test_exit_meaning(code: int | None, meaning: str | None) -> None:
    assert exit_meaning(code) == meaning


def test_failure_cause_skips_traceback_frames() -> None:
    assert failure_cause(["Traceback (most recent call last):", '  File "x.py", line 1', "RuntimeError: boom"]) \
        == "RuntimeError: boom"
