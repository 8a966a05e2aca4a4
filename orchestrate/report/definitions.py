"""The metric definitions: the one text that ``docs/metrics.md`` and ``report.html`` show.

Stage: report. ``python -m orchestrate.report.definitions`` prints ``docs/metrics.md``; a test holds
the two equal, so the page a reader opens and the file a reader browses never disagree. The
formulas themselves live in ``locustfiles/metrics.py`` (per request) and ``report/aggregates/``.
"""

from __future__ import annotations

METRIC_DEFINITIONS = """\
All times are `time.perf_counter()` on the client, taken when the line arrives from the socket.

| name | definition |
|---|---|
| TTFT | from just before the request is sent to the arrival of the first SSE event carrying output of any kind: non-empty `delta.content`, or a reasoning model's thinking (`delta.reasoning_content` from llama.cpp, `delta.reasoning` from vLLM). Headers and the role-only first event do not count. A request with no content has no TTFT. The TCP connection is opened before the clock starts (a user's first, and any the server closed since): its time is the record's `connect_ms`, and `connections` in the summary counts them and the reconnects. |
| TTFO | time to first output token of the answer (AIPerf's name): send → the first event with non-empty `delta.content`, after any reasoning. The same instant as TTFT for a model that does not reason; a reasoning model's thinking time lies between them. In `summary.json` as `latency_ms.ttfo` (and `reasoning.ttfo_ms`); `summary.md` shows its row when a reply reasoned. |
| E2E | from send to the end of the stream (`data: [DONE]`). |
| TPOT | per request: (E2E − TTFT) / (output_tokens − 1), only when output_tokens > 1, over every output token (reasoning included). vLLM's and SGLang's "TPOT"; AIPerf and GuideLLM call it "ITL". |
| TPOT (answer) | a reasoning reply's own answer: (E2E − TTFO) / (answer tokens − 1), answer tokens = output_tokens − reasoning tokens (`reasoning.answer_tpot_ms`). |
| reasoning tokens | `usage.completion_tokens_details.reasoning_tokens` when the server reports it (OpenAI-style servers), else one per reasoning event (llama.cpp and vLLM report no count); `reasoning_tokens_source` names which. `summary.json` → `reasoning`: requests that reasoned, tokens, their share of the output, TTFO and the answer's TPOT; `null` when no reply reasoned. |
| energy | the serving machine's energy over the headline's window (first request sent to last response ended): an energy counter read at the window's ends where there is one (NVML through `nvidia-ml-py`, else the CPU packages' RAPL counters), else `nvidia-smi --query-gpu=power.draw` sampled every second and integrated. The GPUs charged are the server's, summed: the devices its container was given (`docker: {gpus: [0, 1]}`), or the `CUDA_VISIBLE_DEVICES` it was started with (as indices or UUIDs: set `CUDA_DEVICE_ORDER=PCI_BUS_ID` so its indices are `nvidia-smi`'s); every GPU the driver lists when it was not restricted or is not ours (`--url`); a server given no GPU is charged its CPU packages (RAPL). `summary.json` → `energy {source, devices, joules, mean_watts, idle_watts, output_tokens_per_joule, joules_per_output_token, prefill_tokens_per_joule, coverage, window_s, steady_state}`. `idle_watts` is the draw sampled before the load. Readings that cover less than 95 % of the window give no joules, and `unavailable` says why. So does a machine without any reading (`unavailable`: what it lacks). `compare.md` states "J per output token ×r" beside the other ratios when both variants measured it. |
| GPU telemetry | each charged GPU at every sample (`metrics.jsonl`'s `gpus`; NVML, else `nvidia-smi --query-gpu`): utilization, memory used, temperature, SM clock and the active clock throttle reasons. `summary.json`'s `gpus` gives per GPU the mean utilization, the hottest temperature, the median and lowest SM clock, and the samples it throttled in: a slowdown reason active (`hw_slowdown`, `sw_thermal_slowdown`, `hw_thermal_slowdown`, `hw_power_brake_slowdown`). The power cap (`sw_power_cap`) is counted apart, since a GPU at full load usually sits at it. A throttled variant gets a note, and a comparison with it is confounded (`gpu_throttle`). |
| server side | what the server's own `/metrics` said, in one vocabulary for llama.cpp (`llamacpp:`), vLLM (`vllm:`), SGLang (`sglang:`) and TGI (`tgi_`): requests running and waiting (its queue), KV-cache use (0–1; not in llama.cpp's `/metrics`), prompt and generated token counters, prefix-cache hits, and its latency histograms (TTFT, ITL, TPOT, queue time, E2E; llama.cpp has none). Every sample keeps its scrape (`metrics.jsonl`'s `server`). `summary.json`'s `server_side` has the gauges' mean and max, the counters' and histograms' increase from the first scrape to the last, and each histogram's p50/p90/p99, interpolated within its bucket as Prometheus' `histogram_quantile` does. The client's median is compared with the bucket of the server's median: it agrees inside it, or above it by at most 10 % + 5 ms, since the client's clock also runs over the network. `report.html` draws the queue, running requests and KV use over time. |
| short replies | completed replies with fewer output tokens than their `max_tokens` (`requests.short_replies`): the model ended them (EOS), or a server ignored `ignore_eos`. With `ignore_eos` and every reply short, a note says the server ignored it. |
| ITL (inter-chunk) | every gap between consecutive content events, pooled over requests. A gap is weighted by the request's tokens per chunk (output_tokens / content events); the summary states tokens per chunk (1.00 for llama.cpp, which sends one token per event). |
| output_tokens | `usage.completion_tokens` (tokenswarm sends `stream_options.include_usage`); else `timings.predicted_n`; else the number of content events, and the summary says so. |
| prompt_tokens | `usage.prompt_tokens` (= `timings.cache_n` + `timings.prompt_n`). Cached tokens are reported apart, from `usage.prompt_tokens_details.cached_tokens` (llama.cpp, OpenAI, vLLM) or llama.cpp's `timings.cache_n`, with the source named (`token_sources.cached`); prefill work actually done is `prompt_n`. |
| prefill throughput | Σ prompt_tokens of completed requests / duration. |
| decode throughput | Σ output_tokens of completed requests / duration. |
| server timings | llama.cpp's own per-slot view: Σ prompt_n / Σ prompt_ms and Σ predicted_n / Σ predicted_ms over completed requests (one stream's speed, not the aggregate). |
| spec-decode acceptance | Σ `timings.draft_n_accepted` / Σ `timings.draft_n` (present only when a draft model is loaded), and its distribution per request; `null` without a drafter. |
| errors | every request that did not end in a complete stream, by class: `http_<status>:<error.type>` (e.g. `http_400:exceed_context_size_error`), `connection_reset` / `connection_closed` (closed before any response), `timeout`, `stream_cut` (the server cut it after its headers: ended before `[DONE]`, reset, or an incomplete chunk; the record keeps its chunks and `bytes_received`), `bad_chunk` (an unparsable event), `client_error` (a fault of the client itself). A refused connection is retried, not an error (see unsent). Never dropped. |
| cancelled | requests in flight when the run was stopped (time cap, Ctrl-C): in the records with what had arrived (TTFT, chunk times), not errors, not in Locust's rows, not in the token totals. |
| duration | first request sent to last response ended. |
| send delay (open loop) | actual send − scheduled send time (≥ 0): how long a request waited for a free user; *late* when over `late_ms`. TTFT and E2E from the scheduled time add it to TTFT and E2E. |
| unsent | requests planned and never sent: the server was lost, the time cap came, the web UI stopped (`requests.unsent`; the open loop also splits it into overdue and not yet due). completed + errors + cancelled + unsent = the requests planned. |
| steady state | the window where the load was what it was meant to be: requests in flight ≥ 95 % of the users (closed loop) or sends within 5 % of the schedule (open loop); see "Steady state and capacity". |
| capacity | the highest load (users, or requests/s) whose probe's steady state had `attainment` (99 %) of its requests within every `slo:` limit, found by a search against one server start. |
| inputs/s (embeddings, rerank) | Σ inputs of completed requests / duration: the texts an embeddings request embedded, the documents a rerank request ranked (`request.inputs`); tokens/s is Σ the server's `usage.prompt_tokens` / duration. Their replies are one JSON body: E2E (send to its last byte) is their one latency; no TTFT, TPOT or output. |
| valid replies | a checked run's completed replies that parsed and matched the JSON schema, or whose every tool call named a tool sent with arguments matching its `parameters`, ÷ the replies judged (`request.validity`); the others by their first problem (`cut_short`: did not parse and was cut at its `max_tokens`). |
| image tokens | per request with images: the server's `usage.prompt_tokens` less the text's own count measured before the run (`expected_prompt_tokens`), i.e. what its images cost as the server counts them (`image_tokens`); `request.images.ttft_ratio` is the median TTFT of image-bearing requests ÷ that of text-only ones. |
| 95 % intervals | from one run alone (`intervals` over the whole run, `steady_state.intervals` over its window; `summary.md`'s "95 % intervals" table as figure ± half width, and in brackets beside the steady state). A percentile (TTFT, TPOT, E2E p50/p90/p99): distribution-free, between two order statistics x₍ₗ₎ and x₍ᵤ₎ whose ranks come from Binomial(n, q), the count of values below the true q-quantile: the equal-tailed ranks, or one step inside when that is nearer 95 % by the binomial's exact coverage (never below 94 %); a side whose rank falls outside 1..n is unbounded (`?`: a p99 needs a few hundred requests). A rate (decode and prefill tok/s, req/s): batch means, since neighbouring requests share the server and are not independent: the window in 10 equal slices, each slice's rate one value, the figure ± t₀.₉₇₅,₉ · s/√10, never below 0. A mean (TTFT, TPOT, E2E) and the ITL's percentiles: batch means over the requests in send order (10 batches of neighbours; each batch's mean, or its pooled ITL percentile, one value; at least 20 requests), since one request's gaps are far from independent. The SLO share: the same batch means, widened to at least the Wilson score interval of the count. `benchmarks/interval_coverage.py` measures the coverage. |
| cost | with `cost:` prices: `usd` = `duration_s` / 3600 × `usd_per_hour` + `energy.joules` / 3.6e6 × `usd_per_kwh` (the energy only where it was measured), and `usd` ÷ output (input) tokens × 10⁶ per million tokens (`cost`). |
| goodput | with `slo:` limits (ms, any of `ttft_ms`, `tpot_ms`, `e2e_ms`): requests that completed with every limited value ≤ its limit (vLLM's `--goodput`, inclusive), as a count, a share of ALL requests sent (errors and cancelled ones never meet it), per second and as their output tokens per second (over the same duration as the throughput), and `missed_by` each limit (a request over two counts under both), `error` and `cancelled`. A request with one output token has no TPOT and meets a TPOT limit (as in vLLM); a completed request with no content has no TTFT and misses a TTFT limit. |

Percentiles (p50/p90/p99, nearest rank) come from the exact per-request values in
`requests.jsonl`, not from Locust, which rounds response times into buckets. Locust's own stats are
still produced and cross-checked: `summary.json` → `locust_crosscheck` holds requests, failures and
token totals read from Locust's `--json-file` output alone, and `crosscheck_agrees` says whether
they equal the records'.
"""


def page() -> str:
    """``docs/metrics.md``."""
    return "# Metric definitions\n\n" + METRIC_DEFINITIONS


if __name__ == "__main__":
    print(page(), end="")
