"""The server's side of ``summary.json``: ``server`` (``server.json``: how it ran, its launcher), its own
counters (``server_metrics``) and its memory (``memory``).

Stage: report. ``server`` is ``server.json`` as written by ``variantrun.VariantRun.server_info``, with
``facts`` from ``server/preflight.py:ServerFacts.to_dict`` and ``launcher`` from each launcher's ``describe()``
(``server/launchers/``); a sweep step's or a probe's folder has no ``server.json``, so its ``server`` is empty.
``aggregates/servermetrics.py`` gives ``memory`` and ``server_metrics`` from ``metrics.jsonl``.
"""

from __future__ import annotations

from dataclasses import dataclass

from orchestrate.report.jsontypes import mapping, omitted


@dataclass(frozen=True)
class ServerFacts:
    """``server.facts``: what the server said about itself at pre-flight (``/props``, ``/slots``,
    ``/v1/models``); None where it did not say."""

    total_slots: int | None = None
    """Parallel slots (``/props`` ``total_slots``)."""
    per_slot_ctx: int | None = None
    """Context per slot, tokens."""
    model_path: str | None = None
    """The model file the server loaded, as it names it."""
    model_id: str | None = None
    """The model's id (``/v1/models``), sent as the requests' ``model``."""
    build: str | None = None
    """The llama.cpp build (``b<number>-<commit>``)."""
    speculative: bool | None = None
    """A draft model is loaded."""
    chat_template: str | None = None
    """The chat template (``/props``)."""
    has_tokenize: bool = False
    """The server has ``/tokenize`` (exact prompt lengths)."""
    has_apply_template: bool = False
    """The server has ``/apply-template``."""


@dataclass(frozen=True)
class EmbeddedConfig:
    """``server.launcher.config`` (embedded launcher): what ``xllamacpp`` was started with, as llama-server's
    flags (``server/launchers/embedded.py:EmbeddedConfig``)."""

    model_path: str = ""
    """The model file (``--model``)."""
    parallel: int = 4
    """Slots (``--parallel``)."""
    ctx_size: int = 0
    """Total context across slots (``-c``); 0: ``parallel`` × 2048."""
    flash_attn: str = "auto"
    """``on``, ``off`` or ``auto``."""
    draft_model_path: str | None = None
    """The draft model file; None without a drafter."""
    draft_n_max: int = 4
    """Most tokens drafted at a time."""
    threads: int = 1
    """CPU threads."""
    host: str = "127.0.0.1"
    """The address it listened on."""
    port: int = 0
    """The port asked (0: a free one)."""
    metrics: bool = True
    """``/metrics`` on."""
    alias: str | None = None
    """The model's alias (``--alias``); None: none."""
    api_keys: tuple[str, ...] = ()
    """The API keys it required, in clear."""
    verbosity: int = 3
    """llama.cpp's log level (3: startup and about 8 lines a request; 2: warnings and errors)."""
    swa_full: bool = omitted(False)
    """``--swa-full``: the whole cache of sliding-window layers kept (prefix reuse on Gemma 3); absent when off."""
    batch_size: int = omitted(0)
    """``-b``; absent: llama.cpp's default."""
    ubatch_size: int = omitted(0)
    """``-ub``; absent: llama.cpp's default."""
    embeddings: bool = omitted(False)
    """``--embeddings``: ``/v1/embeddings`` served; absent when off."""
    pooling: str | None = omitted()
    """``--pooling``; absent: the model's."""
    reranking: bool = omitted(False)
    """``--reranking``: ``/v1/rerank`` served; absent when off."""
    mmproj_path: str | None = omitted()
    """The multimodal projector (``--mmproj``); absent without one."""


@dataclass(frozen=True)
class DeviceRequest:
    """One GPU request of a container (docker-py's ``DeviceRequest``, its keys as the engine's API names them)."""

    Driver: str = ""
    """The device driver (empty: the default)."""
    Count: int = 0
    """How many GPUs: -1 every one (``gpus: all``), 0 those in ``DeviceIDs``."""
    DeviceIDs: tuple[str, ...] = ()
    """The GPUs asked for (indices or UUIDs), with ``Count`` 0."""
    Capabilities: tuple[tuple[str, ...], ...] = ()
    """The capabilities asked for (``[["gpu"]]``)."""
    Options: dict[str, str] = mapping("option")
    """Driver options (none set)."""


@dataclass(frozen=True)
class ContainerSpec:
    """``server.launcher.container`` (docker launcher): the keyword arguments of ``containers.create``, exactly
    what was asked of the engine."""

    image: str = ""
    """The image."""
    command: tuple[str, ...] = ()
    """llama-server's arguments, with the container's paths."""
    name: str = ""
    """The container's name (``tokenswarm-<variant>-<hex>``)."""
    volumes: tuple[str, ...] = ()
    """Mounts, ``HOST:CONTAINER[:ro|rw]``: the model folders read-only, then ``docker: {volumes}``."""
    device_requests: tuple[DeviceRequest, ...] = ()
    """The GPUs asked for; empty with ``gpus: none``."""
    ports: dict[str, tuple[str, int]] = mapping("port")
    """The container port (``8080/tcp``) → the host address and port it is published at."""
    labels: dict[str, str] = mapping("label")
    """tokenswarm's labels: its mark, the owner's pid and host, the log path (to remove leftovers)."""
    environment: dict[str, str] = mapping("variable")
    """Environment variables set in the container (``docker: {env}``)."""
    entrypoint: tuple[str, ...] = omitted(())
    """The entrypoint (``docker: {entrypoint}``); absent: the image's."""
    user: str | None = omitted()
    """The user it ran as (``docker: {user}``); absent: the image's."""


@dataclass(frozen=True)
class LauncherDescription:
    """``server.launcher``: what was started (``Launcher.describe()``). ``kind`` says which keys follow:
    embedded ``config, argv, pid``; process ``argv, pid``; docker ``image, container, url, container_id,
    container_name, leftovers_removed``; external ``url``. A key of another kind is absent."""

    kind: str = ""
    """``embedded``, ``process``, ``docker`` or ``external``."""
    config: EmbeddedConfig | None = omitted()
    """embedded: the server's configuration."""
    argv: tuple[str, ...] = omitted(())
    """embedded, process: the command that ran the server."""
    pid: int | None = omitted()
    """embedded, process: the server's process id (process: None once it has exited)."""
    image: str | None = omitted()
    """docker: the image."""
    container: ContainerSpec | None = omitted()
    """docker: the container asked of the engine."""
    url: str | None = omitted()
    """docker, external: the server's URL."""
    container_id: str | None = omitted()
    """docker: the container's id; None when it was never created."""
    container_name: str | None = omitted()
    """docker: the container's name."""
    leftovers_removed: tuple[str, ...] = omitted(())
    """docker: containers of a gone tokenswarm run removed before this one was created."""


@dataclass(frozen=True)
class Server:
    """``server``: ``server.json``, how the server ran (``VariantRun.server_info``), its empty keys left out;
    empty in a step's or probe's summary (their folders have no ``server.json``)."""

    status: str | None = omitted()
    """The variant's status as the run loop saw it: ``completed``, ``failed_to_load``, ``crashed``,
    ``server_lost``, ``error``, ``interrupted``."""
    facts: ServerFacts | None = omitted()
    """What the server said about itself; absent when it never answered pre-flight."""
    ready_s: float | None = omitted()
    """Seconds from its start to ready (the model loaded, ``/health`` answered); absent when it never was."""
    exit_code: int | None = omitted()
    """Its exit code when it exited; None while it ran (or was not ours)."""
    cause: str | None = omitted()
    """Why it failed or went down, in one line; None when it did not."""
    hint: str | None = omitted()
    """What to try about the cause; None without one."""
    down_at: float | None = omitted()
    """Wall clock the liveness watch found it dead or lost; None when it stayed up."""
    launcher: LauncherDescription | None = omitted()
    """What was started; absent when no launcher was made."""
    log_tail: tuple[str, ...] = omitted(())
    """The server log's last 30 lines (``failed_to_load``, ``crashed``, ``server_lost`` only)."""


@dataclass(frozen=True)
class ServerCounters:
    """``server_metrics.counters``: how much each llama.cpp ``/metrics`` counter grew over the samples (first to
    last, across a restart); None for a counter the server does not have."""

    prompt_tokens: int | None = None
    """``prompt_tokens_total``: prefill work (cached tokens excluded)."""
    cached_tokens: int | None = None
    """``prompt_tokens_cached_total``: prompt tokens served from the cache (recent builds)."""
    prompt_seconds: float | None = None
    """``prompt_seconds_total``: seconds spent in prefill, summed over slots."""
    predicted_tokens: int | None = None
    """``tokens_predicted_total``: tokens generated."""
    predicted_seconds: float | None = None
    """``tokens_predicted_seconds_total``: seconds spent generating, summed over slots."""
    decode_calls: int | None = None
    """``n_decode_total``: ``llama_decode`` calls."""
    draft_tokens: int | None = None
    """``spec_decode_num_draft_tokens_total``: tokens drafted."""
    accepted_tokens: int | None = None
    """``spec_decode_num_accepted_tokens_total``: drafted tokens accepted."""


@dataclass(frozen=True)
class Comparison:
    """One token count on both sides: the server's counter against Σ over ALL records (None as 0)."""

    server: int = 0
    """The server's counter growth."""
    records: int = 0
    """Σ of the records' field."""
    diff: int = 0
    """``server`` − ``records``."""
    tolerance: int | None = None
    """What the incomplete requests can explain; None when it cannot be known."""


@dataclass(frozen=True)
class VsRecords:
    """``server_metrics.vs_records``: the server's token counts against the records'; a count is absent when
    the server has no such counter."""

    output_tokens: Comparison | None = omitted()
    """``tokens_predicted_total`` vs the records' ``output_tokens``."""
    prefill_tokens: Comparison | None = omitted()
    """``prompt_tokens_total`` vs the records' ``prefill_tokens`` (``timings.prompt_n``)."""
    cached_tokens: Comparison | None = omitted()
    """``prompt_tokens_cached_total`` vs the records' ``cached_tokens``."""


@dataclass(frozen=True)
class ServerMetrics:
    """``server_metrics``: the server's own counters over the load (``servermetrics.server_metrics``), a second,
    independent count of the records' tokens; they never feed the headline."""

    available: bool = False
    """Some sample carried llama.cpp ``/metrics`` values."""
    unavailable_reason: str | None = None
    """Why not (``http_<status>``, ``not_llamacpp``, ``scrape_failed:<error>``, ``no_samples``); None when available."""
    samples: int = 0
    """Samples in ``metrics.jsonl`` (one a second)."""
    window_s: float | None = None
    """Seconds from the first to the last sample with ``/metrics`` values; None without any."""
    counters: ServerCounters | None = None
    """Each counter's growth; None when unavailable."""
    busy_prefill_tok_s: float | None = None
    """Σ prompt tokens ÷ Σ prefill seconds the server counted (per-slot, not the aggregate)."""
    busy_decode_tok_s: float | None = None
    """Σ generated tokens ÷ Σ generation seconds the server counted (per-slot, not the aggregate)."""
    requests_processing_max: int | None = None
    """The peak of the ``requests_processing`` gauge; None without it."""
    requests_deferred_max: int | None = None
    """The peak of the ``requests_deferred`` gauge (waiting for a slot); None without it."""
    vs_records: VsRecords | None = None
    """The server's counts against the records'; None when unavailable or without records."""
    agrees_with_records: bool | None = None
    """Every count compared is equal; None when nothing was compared."""
    within_tolerance: bool | None = None
    """Every difference is within what incomplete requests explain; None when unknowable."""


@dataclass(frozen=True)
class Memory:
    """``memory``: peaks over the samples of ``metrics.jsonl`` (``servermetrics.summarize_metrics``)."""

    peak_bytes: int | None = None
    """The server's peak memory, bytes; None when never read."""
    source: str | None = None
    """How it was read: ``process_tree`` (RSS of the server's processes) or ``container``."""
    gpu_peak_bytes: int | None = None
    """Peak GPU memory in use, bytes (every GPU, or system memory on unified memory); None without a reading."""
    gpu_source: str | None = None
    """``nvidia-smi`` (summed over GPUs) or ``system`` (unified memory: MemTotal − MemAvailable)."""
    gpu_total_bytes: int | None = None
    """The GPUs' total memory, bytes; None without a reading."""

