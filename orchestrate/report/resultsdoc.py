"""``docs/results.md``: the files of a run, and ``summary.json`` key by key, generated from its types.

Stage: report. The key-by-key table is ``schema.Summary`` walked field by field (``jsontypes.schema``): every
key at every depth, with its type and the docstring below its field, so the page cannot name a key the file
does not have, nor miss one it has. ``python -m orchestrate.report.resultsdoc > docs/results.md`` writes it; a
test holds the two equal, and the integration tests find every key of the summaries each kind of run writes
in it.
"""

from __future__ import annotations

import re

from orchestrate.report.jsontypes import Entry, schema
from orchestrate.report.schema import Summary

LAYOUT = """\
```
results/<UTC timestamp>-<scenario>/
  scenario.yaml                      every variant's settings as run (overrides applied)
  report.html                        the run on one interactive page, self-contained (works offline)
  compare.md  compare.json  compare.png  compare_sweep.png (sweeps)
  noise_floor.json                   this host's noise floor when one was measured (tokenswarm noise-floor)
  tune.json                          (tokenswarm tune) the tune as asked; each candidate started, in order, with its
                                     floor and time; those a memory failure pruned; why it ended (written as it runs)
  tune_summary.json  summary.md      (tune) the answer: the best as a llama-server command line, the runner-up, the
                                     frontier, every candidate with its figures or why it was dropped (docs/tuning.md)
  repeat-<i>/<variant>/              (repeats: K) each repeat a run folder of its own, with the files below
  <variant>/
    server.log  server.json          server output; launcher and command, /props facts, readiness,
                                     exit code, cause, hint, log tail
    server.first-attempt.log         (only after a retry) the log of the failed load
    prompts.jsonl                    the exact prompts sent, with their measured token counts
    requests.jsonl                   one record per request (exact floats), appended as each ends; its
                                     request_id is sent as the X-Request-Id header, to match server or proxy logs
                                     (a step's ids start with its label: `probe-03-users-8/local-12`)
    requests.columns.parquet  requests.offsets.f64   the same records as columns, kept by the first report:
                                     a later one reads them in seconds while requests.jsonl is unchanged (its
                                     size and time are stamped in them); a cache, safe to delete
    metrics.jsonl                    every second: server memory, GPU/system memory, /metrics counters,
                                     the host's own load (foreign CPU, steal, other GPU processes)
    locust_stats.csv  locust_stats_history.csv  locust_failures.csv  locust_exceptions.csv
    locust_stats.json  locust.log
    summary.json  summary.md  latency.png  throughput.png
    sweep.png  steps/warmup/  steps/<key>-<value>/   (sweeps) the curves; the warm-up and each step's own folder
                                     (steps/warmup/ also holds a variant's warmup_prompts); each step has its
                                     own metrics.jsonl, the server's samples across it
    search.json  capacity.png  steps/probe-NN-<over>-<value>/   (capacity search) the search and its probes
    run.json                         what the run knew that its files do not say (status, settings, SLO):
                                     `tokenswarm report` rebuilds the summary from it and the files
    vllm_bench.json                  the result as `vllm bench serve --save-result` writes it (with
                                     `--save-detailed`: every request's lengths, TTFT, ITLs and errors too)
    client.json                      the load generators' self-check (loop lag, CPU) per process
    arrivals.json  stages.json       (open loop / ramp stages) the schedule; when each stage began
    ui_steps.png  llm_history.csv    (--ui) each user level held as a step; the live charts' points
    workers.json  locust-worker-N.log    (distributed runs) the master's ledger of its workers, and the rejected ones
```
"""

KEYS_INTRO = """\
## `summary.json`, key by key

One typed structure (`orchestrate/report/schema/`) written as JSON. A path names a key inside its block:
`[]` is each item of a list, `<name>` each key of a mapping whose keys are data (an error class, an SLO
limit, a setting). Blocks only some runs have (a search's `capacity`, an open loop's `arrivals`, a web UI
run's `ui_steps`) are absent from the others, as the meaning column says; a figure that could not be
measured is `null`. The run loop's own facts (`status` … `resumed`) are `RunFacts`, which `run.json` keeps so
`tokenswarm report` rebuilds the same file; the rest is computed from the variant's files.
"""

REST = """\
`vllm_bench.json` is the same variant in vLLM's result JSON, for dashboards that read it: vLLM's
field names and units (per-request `latencies`, and with `--save-detailed` `ttfts`, `itls` and the other lists
vLLM writes only then, in seconds; aggregates in ms),
`mean/median/std/p50/p90/p95/p99_{ttft,tpot,itl,e2el}_ms` with numpy's estimators as vLLM computes
them (its median interpolates where `summary.json`'s nearest-rank p50 does not), its unweighted
per-chunk ITL, `request_goodput` from the `slo:` limits (else null), `request_rate` (the load's
`rate`, or `"inf"` for closed-loop users), `burstiness`, `max_concurrency` (`users`: the cap in
flight), and empty `generated_texts`; `itls` are written to 0.1 µs, the records' own resolution. TTFT and E2E stay
tokenswarm's (first content chunk; end of stream); `orchestrate/report/vllm_format.py` lists every
difference.

**The load generator checks itself.** Every process that runs users samples its own event-loop lag
(a greenlet sleeps 10 ms and records how late it wakes) and its CPU, and `summary.json` gets
`client: {loop_lag_ms: {p50, p99, max, own_p99}, cpu_pct, workers, saturated, host_busy}` (the
worst process; `client.json` has every one). `own_p99` is the part of the lag the process surely
spent running its own work (its CPU time beyond the 10 ms sleep). When that passes 5 ms (an idle
worker's p99 is well under 1 ms; 5 ms is a quarter of a 20 ms token gap) or a process uses 90 % of a
core, `saturated` is true and the notes say "the load generator was saturated ...: timings are
inflated by up to X ms at p99 — add workers (--workers N)". When the lag p99 passes 5 ms but the
process was mostly waiting for a core that other processes held, `host_busy` is true instead and
the note says so: more workers would not help, free cores would. How far one
process goes on your host: `tokenswarm calibrate`; how tokenswarm compares with other clients:
[docs/benchmarks.md](benchmarks.md); faults and bad input tried: [docs/reliability.md](reliability.md).

A run refuses to start with less than 64 MiB free where results go (`TOKENSWARM_MIN_FREE_MB`
changes it); if the disk fills up anyway, the run stops with one line and keeps every record
already written.

Memory: the server's own (the process tree's RSS, or the container's usage), and GPU memory from
`nvidia-smi`; on unified-memory machines such as the GB10 (DGX Spark), where `nvidia-smi` reports
no framebuffer memory, system memory in use (`/proc/meminfo`), with the source named.

## The tok/s figures of `summary.json`, and which one to publish

One name, one meaning. `prefill_tok_s` and `decode_tok_s` are always the run's throughput formula
(Σ tokens of completed requests ÷ seconds, over every slot), over the whole run or a part of it; the
server's own views of speed have names of their own:

| key | what it is |
|---|---|
| `throughput.prefill_tok_s`, `.decode_tok_s` | **the headline**: Σ prompt (output) tokens of completed requests ÷ the duration (first send to last end), over every slot. The reference study's figure. |
| `steady_state.prefill_tok_s`, `.decode_tok_s` | the same over the steady-state window only (ramp and drain left out); decode counts the tokens that arrived inside the window, prefill each prompt spread over its prefill. |
| the same keys in `stages[]` (ramp), `sweep.steps[]`, `ui_steps.steps[]`, `capacity.probes[].steady_state` | each stage's, step's or probe's own throughput, on the same definitions. |
| `locust_crosscheck.prefill_tok_s`, `.decode_tok_s` | the same formula on Locust's own counts: a check of the records, never a result. |
| `server_timings.per_slot_prefill_tok_s`, `.per_slot_decode_tok_s` | llama.cpp's per-slot view: Σ `prompt_n` ÷ Σ `prompt_ms` and Σ `predicted_n` ÷ Σ `predicted_ms` over completed requests: one stream's speed, which does not add up across slots. |
| `server_metrics.busy_prefill_tok_s`, `.busy_decode_tok_s` | the server's `/metrics`: Σ tokens ÷ Σ seconds it counted itself busy (`prompt_seconds_total`, `tokens_predicted_seconds_total`). |

`report.html` and `compare.md` use `throughput` (or `steady_state`, when every variant has one, and say
so); the others are in `summary.md`'s diagnostics.
"""


def _cell(text: str) -> str:
    """A docstring as a table cell: JSON's ``null``, markdown's single backticks, no cell breaks."""
    text = re.sub(r"``([^`]+)``", r"`\1`", text)
    return re.sub(r"\bNone\b", "null", text).replace("|", "\\|")


def key_table(entries: list[Entry]) -> list[str]:
    """One row per key: its path, its type and its meaning."""
    return ["| key | type | meaning |", "|---|---|---|"] + [
        f"| `{e.path}` | {_cell(e.type)} | {_cell(e.doc)} |" for e in entries]


def documented_paths(page_text: str) -> set[str]:
    """The key paths a results page's tables name (the first cell of each row)."""
    return set(re.findall(r"^\| `([^`]+)` \|", page_text, flags=re.M))


def page() -> str:
    """``docs/results.md``."""
    return "\n".join([f"{TITLE}\n", LAYOUT, KEYS_INTRO, *key_table(list(schema(Summary))), "", REST])


TITLE = "# Results: the files of a run, and what `summary.json` holds"

if __name__ == "__main__":
    print(page(), end="")
