"""Child process of ``EmbeddedLauncher``: run llama.cpp's server from the ``xllamacpp`` wheel.

Stage: server (a child process of its own).
``xllamacpp.Server`` has no stop method, so it lives in its own process and is stopped by
signal. Usage: ``python -m orchestrate.server.launchers.embedded_child --config JSON --ready-fd N``.
``Server(params)`` returns once the model is loaded and the socket listens; the bound URL is then
written as one line to file descriptor N, and the process blocks until it is signalled or its
parent dies. llama.cpp logs go to stderr (the launcher's ``server.log``). It imports stdlib and
``xllamacpp`` only, so the child starts in about 0.1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import xllamacpp as xl

FLASH_ATTN = {"on": "LLAMA_FLASH_ATTN_TYPE_ENABLED", "off": "LLAMA_FLASH_ATTN_TYPE_DISABLED",
              "auto": "LLAMA_FLASH_ATTN_TYPE_AUTO"}


def build_params(config: dict[str, Any]) -> Any:
    """``xllamacpp.CommonParams`` for an ``EmbeddedConfig`` given as a dict."""
    params = xl.CommonParams()
    params.model.path = config["model_path"]
    params.n_parallel = config["parallel"]
    params.n_ctx = config["ctx_size"] or config["parallel"] * 2048
    params.flash_attn_type = getattr(xl.llama_flash_attn_type, FLASH_ATTN[config["flash_attn"]])
    params.endpoint_metrics = config["metrics"]
    params.cpuparams.n_threads = config["threads"]
    params.cpuparams_batch.n_threads = config["threads"]
    params.verbosity = config["verbosity"]
    params.hostnames = [config["host"]]
    params.port = config["port"]
    if config["alias"]:
        params.model_alias = {config["alias"]}
    params.api_keys = list(config["api_keys"])
    params.swa_full = bool(config.get("swa_full", False))
    if config.get("batch_size"):
        params.n_batch = config["batch_size"]
    if config.get("ubatch_size"):
        params.n_ubatch = config["ubatch_size"]
    if config.get("embeddings") or config.get("reranking"):
        params.embedding = True
    pooling = "rank" if config.get("reranking") else config.get("pooling")
    if pooling:
        params.pooling_type = getattr(xl.llama_pooling_type, f"LLAMA_POOLING_TYPE_{pooling.upper()}")
    if config.get("mmproj_path"):
        params.mmproj.path = config["mmproj_path"]
    if config["draft_model_path"]:
        spec = params.speculative
        spec.types = [xl.common_speculative_type.COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE]
        spec.draft.mparams.path = config["draft_model_path"]
        spec.draft.n_max = config["draft_n_max"]
        spec.draft.cpuparams.n_threads = config["threads"]
        spec.draft.cpuparams_batch.n_threads = config["threads"]
    return params


def main(argv: list[str] | None = None) -> int:
    """Start the server, report its URL, block; returns only on a failed start."""
    parser = argparse.ArgumentParser(prog="embedded_child")
    parser.add_argument("--config", required=True, help="EmbeddedConfig as JSON")
    parser.add_argument("--ready-fd", type=int, required=True, help="where to write the URL")
    args = parser.parse_args(argv)
    config = json.loads(args.config)
    parent = os.getppid()
    try:
        server = xl.Server(build_params(config))
    except RuntimeError as exc:  # the reason is in llama.cpp's log lines just above
        print(f"tokenswarm: embedded server failed to start: {exc}", file=sys.stderr, flush=True)
        return 1
    url = server.listening_address
    print(f"tokenswarm: embedded server listening on {url} (pid {os.getpid()})",
          file=sys.stderr, flush=True)
    with os.fdopen(args.ready_fd, "w") as ready:
        ready.write(url + "\n")
    while os.getppid() == parent:  # exit when orphaned; SIGTERM ends the process meanwhile
        time.sleep(1.0)
    print("tokenswarm: parent process gone; embedded server exiting", file=sys.stderr, flush=True)
    os._exit(0)  # skip the server's destructors: nothing to flush, and they may block


if __name__ == "__main__":
    sys.exit(main())
