"""The seam between measuring and everything else: ``register(events)`` wires tokenswarm into Locust.

Stage: load → records. ``users.py`` only measures and fires ``LlmRun.record``; the listeners here
turn each finished record into Locust rows (the request row and METRIC rows, shown in the console, web
UI and CSV), append it to ``requests.jsonl``, and own the prompt dispenser.

Custom hooks (on ``environment.tokenswarm``, the run's ``LlmRun``, made at init):

``LlmRun.record(record: RequestRecord)``
    fired once per request, after it has finished (completed, failed or cancelled), on the process
    where it ran (a worker, or the local runner).
``LlmRun.record_collected(record: RequestRecord)``
    fired once per request on the process that keeps the run's records (the local runner, or the
    master once a worker's batch arrives). The records file, the dispenser and the web UI listen here.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import gevent
from locust.env import Environment
from locust.event import EventHook, Events
from locust.runners import STATE_STOPPED, STATE_STOPPING, LocalRunner, MasterRunner, WorkerRunner
from locust.stats import RequestStats

from locustfiles import arrivals, conversations, distributed, finalcsv, options, selfcheck, stages
from locustfiles.dataset import DataFileError
from locustfiles.dispenser import PromptDispenser
from locustfiles.endpoints import CHAT, ENDPOINTS, request_shape
from locustfiles.promptsource import load_prompts
from locustfiles.records import CANCELLED, INPUT, METRIC, NO_CONTENT, OK, REQUEST_TYPE, RequestRecord
from locustfiles.runstate import LlmRun
from locustfiles.serverwatch import RefusalWatch
from locustfiles.webui import install_webui

log = logging.getLogger("tokenswarm")
PARENT_CHECK_S = 1.0
CANCEL_GRACE_S = 0.2


class RequestFailure(Exception):
    """The failure Locust stores for a request; its text is the fixed error class, so rows group."""


def fire_locust_rows(environment: Environment, record: RequestRecord) -> None:
    """The request row (E2E, output tokens as length) and TTFT/TPOT METRIC rows of one record.

    The request row is named by the endpoint's path. METRIC rows are fired for completed requests only, so Locust's token totals (the TTFT row's
    length is prompt tokens) match the records' totals over completed requests. A completed reply
    with no content (an immediate EOS: 1 output token, no content chunk) has no TTFT; its prompt
    tokens ride on a ``NO_CONTENT`` row (time: its E2E), so the totals still match and the web UI
    shows how many there were; a one-body reply's (embeddings, rerank) ride on an ``INPUT`` row. Requests cancelled by the stop (time cap, Ctrl-C) appear in the
    records only.
    """
    if record.status == CANCELLED:
        return  # cut off by the stop itself: not a server outcome, and Locust may already be writing
    fire = environment.events.request.fire
    ok = record.status == OK
    endpoint = ENDPOINTS.get(record.endpoint, ENDPOINTS[CHAT])
    fire(request_type=REQUEST_TYPE, name=endpoint.path, response_time=record.e2e_ms or 0.0,
         response_length=(record.output_tokens or 0) if ok else 0, context={},
         exception=None if ok else RequestFailure(record.error_class or record.status))
    if not ok:
        return
    if not endpoint.streams:
        fire(request_type=METRIC, name=INPUT, response_time=record.e2e_ms or 0.0,
             response_length=record.prompt_tokens or 0, context={}, exception=None)
    elif record.ttft_ms is not None:
        fire(request_type=METRIC, name="TTFT", response_time=record.ttft_ms,
             response_length=record.prompt_tokens or 0, context={}, exception=None)
    else:
        fire(request_type=METRIC, name=NO_CONTENT, response_time=record.e2e_ms or 0.0,
             response_length=record.prompt_tokens or 0, context={}, exception=None)
    if record.tpot_ms is not None:
        fire(request_type=METRIC, name="TPOT", response_time=record.tpot_ms,
             response_length=record.output_tokens or 0, context={}, exception=None)


def count_requests_only(stats: RequestStats) -> None:
    """Locust's "Aggregated" row counts requests: the METRIC rows (TTFT, TPOT, NO_CONTENT) are figures of
    those same requests, so they stay out of its totals (300 requests, not 900) and in their own rows.
    Workers report their totals to the master, so the master's are right too."""
    log_request = stats.log_request

    def log(method: str, name: str, response_time: int, content_length: int) -> None:
        if method == METRIC:
            stats.entries[(name, method)].log(response_time, content_length)
        else:
            log_request(method, name, response_time, content_length)

    stats.log_request = log  # type: ignore[method-assign]


def register(events: Events) -> None:
    """Called once by the locustfile at import: flags now, the rest when Locust inits."""
    events.init_command_line_parser.add_listener(options.add_arguments)
    events.init_command_line_parser.add_listener(conversations.add_arguments)
    events.init.add_listener(install)


def install(environment: Environment, **_kwargs: Any) -> None:
    """Create ``environment.tokenswarm`` and the hooks, and subscribe the listeners.

    ``LlmRun.record`` fires where the request ran: its Locust rows are fired there (Locust's own
    master/worker stats then aggregate them), and the record travels on. ``LlmRun.record_collected``
    fires once per record on the process that keeps the run (the local runner, or the master):
    the records file, the dispenser's count and the web UI listen to it.
    """
    run = LlmRun(environment)
    run.record, run.record_collected = EventHook(), EventHook()
    setattr(environment, "tokenswarm", run)  # read back typed through runstate.llm_run
    opts = environment.parsed_options
    if opts is not None and not isinstance(environment.runner, WorkerRunner):
        try:
            request_shape(opts.endpoint, opts.request_extra, opts.check)
            run.prompts = load_prompts(opts)
        except (DataFileError, ValueError) as exc:  # one line and exit 2 (bad input), before a user is spawned
            print(f"tokenswarm: error: {exc}", file=sys.stderr, flush=True)
            raise SystemExit(2) from None
    count_requests_only(environment.stats)
    runner = environment.runner

    def on_record(record: RequestRecord, **_kw: Any) -> None:
        fire_locust_rows(environment, record)
        if not isinstance(runner, WorkerRunner):
            run.record_collected.fire(record=record)

    def on_collected(record: RequestRecord, **_kw: Any) -> None:
        if run.records_file is not None:
            try:
                run.records_file.write(record.to_json() + "\n")  # line-buffered: on disk at once
                run.records_written += 1
            except OSError as exc:  # a full disk: stop cleanly, keeping every line already written
                run.records_file = None
                log.error("tokenswarm: cannot write records (%s); stopping the run", exc.strerror or exc)
                if environment.runner is not None:
                    gevent.spawn(environment.runner.quit)
        if run.dispenser is not None:
            run.dispenser.done()

    def on_test_start(environment: Environment, **_kw: Any) -> None:
        opts = environment.parsed_options
        if opts is not None:  # a worker's options arrive with the test: the window is read here
            run.server_watch = RefusalWatch(opts.server_lost_after, on_lost=run.on_server_lost)
        if opts is None or isinstance(environment.runner, WorkerRunner):
            return
        if run.prompts is None:
            run.prompts = load_prompts(opts)
        run.open_records(opts.records_file)
        run.dispenser = PromptDispenser(run.prompts, opts.num_prompts, on_drained=_quit(environment))
        log.info("tokenswarm: %d prompts to send, records -> %s", run.dispenser.limit, opts.records_file)

    def on_quitting(environment: Environment, **_kw: Any) -> None:
        # Locust fires `quitting` before it stops the users on SIGTERM (the orchestrator's stop): stop
        # them first, so the requests in flight are written as cancelled. Users stopped by the time cap
        # or Ctrl-C are killed without waiting; let them run their `finally` before the file closes.
        local = environment.runner
        if isinstance(local, LocalRunner) and local.state not in (STATE_STOPPED, STATE_STOPPING):
            local.stop()
        gevent.sleep(CANCEL_GRACE_S)
        run.close_records()

    def watch_parent(pid: int) -> None:
        while True:
            gevent.sleep(PARENT_CHECK_S)
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                log.error("tokenswarm: the orchestrator (pid %d) is gone; quitting", pid)
                if environment.runner is not None:
                    environment.runner.quit()
                return

    def on_user_error(user_instance: Any, exception: Exception, tb: Any, **_kw: Any) -> None:
        # A bug in the user (not a server failure: those are records) would repeat on every
        # request; stop at once instead of spinning until the time cap.
        log.error("tokenswarm: user error %r; stopping the run", exception)
        if environment.runner is not None:
            gevent.spawn(environment.runner.quit)

    run.record.add_listener(on_record)
    run.record_collected.add_listener(on_collected)
    environment.events.test_start.add_listener(on_test_start)
    environment.events.quitting.add_listener(on_quitting)
    environment.events.user_error.add_listener(on_user_error)
    if isinstance(runner, (MasterRunner, WorkerRunner)):
        distributed.install(environment, run)
    selfcheck.install(environment, run)
    arrivals.install(environment, run)  # after on_test_start: the schedule needs the dispenser
    stages.install(environment)
    finalcsv.install(environment)
    opts = environment.parsed_options
    if opts is not None and opts.exit_with_parent:
        gevent.spawn(watch_parent, opts.exit_with_parent)
    if environment.web_ui is not None:  # Locust with its web UI (not --headless); never on a worker
        install_webui(environment)


def _quit(environment: Environment) -> Any:
    def quit_runner() -> None:
        log.info("tokenswarm: every prompt has been answered; stopping")
        if environment.runner is not None:
            environment.runner.quit()
    return quit_runner
