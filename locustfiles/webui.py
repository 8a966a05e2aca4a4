"""tokenswarm in Locust's web UI: an LLM tab, a live chart page, CSVs, and quitting when a test stops.

Stage: load (the collecting process: the local runner, or the master; workers have no web UI).
``install_webui`` is called by ``events.install`` when Locust has a web UI; it only listens to
``LlmRun.record_collected``, so the figures are the same on one process and on a master aggregating remote
workers.

What it adds (the figures are defined in ``livestats.py``, laid out as text in ``livetable.py``):

- an **LLM** tab (``extended_tabs``/``extended_tables``), its rows riding in ``/stats/requests``
  under ``extended_stats``, refreshed with Locust's own polling; its chart-page address made a link by a
  script added to Locust's page (``webui_page.LINK_SCRIPT``: Locust's tables render text only);
- ``/tokenswarm/charts``: a self-contained page (inline JS, a ``<canvas>``, nothing fetched from
  elsewhere) polling ``/tokenswarm/live`` every second: tokens/s, TTFT and users over time;
- ``/tokenswarm/llm.csv`` (the figures now) and ``/tokenswarm/llm_history.csv`` (one row a
  second), linked from the "Download Data" tab (``extended_csv_files``);
- with ``--quit-on-stop``: Locust quits ``QUIT_DELAY_S`` after a test stops (the Stop button, the
  run time, the last prompt answered), so ``tokenswarm run --ui`` can post-process as headless.
"""

from __future__ import annotations

import csv
import io
import json
import logging
from pathlib import Path
from typing import Any

import gevent
from flask import Response, jsonify, request
from locust.env import Environment

from locustfiles.livestats import LiveStats
from locustfiles.livetable import figures_csv_rows, table_rows
from locustfiles.resultfiles import LLM_HISTORY_CSV
from locustfiles.runstate import llm_run
from locustfiles.webui_page import CHARTS_HTML, LINK_SCRIPT

log = logging.getLogger("tokenswarm")

TAB_KEY = "llm"
CHARTS_PATH = "/tokenswarm/charts"
LIVE_PATH = "/tokenswarm/live"
CSV_PATH = "/tokenswarm/llm.csv"
HISTORY_CSV_PATH = "/tokenswarm/llm_history.csv"
HISTORY_FILE = LLM_HISTORY_CSV
"""The chart page's points, saved beside the records file when Locust quits (the live history of a UI run)."""
SAMPLE_INTERVAL_S = 1.0
"""One chart point a second."""
QUIT_DELAY_S = 1.0
"""After a test stops: time for the Stop request to be answered and late records to arrive."""

TABLE = [{"key": "figure", "title": "LLM figure"}, {"key": "now", "title": "Last 10 s"},
         {"key": "level", "title": "This user level"}, {"key": "run", "title": "Since start"},
         {"key": "how", "title": "Definition"}]
"""The LLM tab's columns. Keys are single words: Locust's UI camel-cases keys."""


def install_webui(environment: Environment) -> LiveStats:
    """Add the LLM tab, the chart page and the CSVs to ``environment.web_ui``; returns the figures."""
    web_ui = environment.web_ui
    assert web_ui is not None, "install_webui needs a web UI (Locust without --headless)"
    stats = LiveStats(in_flight=lambda: _in_flight(environment))
    llm_run(environment).live = stats
    events = environment.events
    llm_run(environment).record_collected.add_listener(lambda record, **_kw: stats.add(record))
    events.test_start.add_listener(lambda **_kw: stats.reset())
    events.reset_stats.add_listener(lambda **_kw: stats.reset())
    events.test_stop.add_listener(lambda **_kw: stats.stop())
    web_ui.template_args.update({
        "extended_tabs": [{"title": "LLM", "key": TAB_KEY}],
        "extended_tables": [{"key": TAB_KEY, "structure": TABLE}],
        "extended_csv_files": [
            {"href": f".{CSV_PATH}", "title": "Download LLM figures CSV"},
            {"href": f".{HISTORY_CSV_PATH}", "title": "Download LLM history CSV (one row a second)"},
            {"href": f".{CHARTS_PATH}", "title": "Open the live LLM charts (tokens/s, TTFT over time)"}]})
    app, auth = web_ui.app, web_ui.auth_required_if_enabled
    assert app is not None

    @app.after_request
    def add_llm_rows(response: Response) -> Response:
        if not request.path.endswith("/stats/requests") or response.status_code != 200:
            return response
        data = response.get_json(silent=True)
        if isinstance(data, dict):
            charts = request.host_url.rstrip("/") + CHARTS_PATH
            data["extended_stats"] = [{"key": TAB_KEY, "data": table_rows(stats.snapshot(), charts,
                                                                          _budget(environment))}]
            response.set_data(json.dumps(data))
        return response

    @app.before_request
    def note_the_forms_users() -> None:
        """Start and Edit post the user count to ``/swarm``: kept as ``--ui-target-users``, which Locust sends
        each worker with its spawn message (a worker's own count is only its share)."""
        if request.endpoint == "locust.swarm" and request.method == "POST" and environment.parsed_options:
            users = request.form.get("user_count", type=int)
            if users is not None:
                environment.parsed_options.ui_target_users = users

    @app.after_request
    def link_the_charts(response: Response) -> Response:
        """Locust's own page gets the script that makes the LLM tab's chart address a link."""
        if request.endpoint != "locust.index" or response.status_code != 200 or response.mimetype != "text/html":
            return response
        page = response.get_data(as_text=True)
        response.set_data(page.replace("</body>", LINK_SCRIPT % {"path": CHARTS_PATH} + "</body>", 1))
        return response

    def live() -> Response:
        since = request.args.get("since", type=float)
        test = request.args.get("test", type=int)
        points = list(stats.history)
        if since is not None and test == stats.test_number:
            points = [p for p in points if p["t"] > since]
        runner = environment.runner
        return jsonify({"test": stats.test_number, "state": runner.state if runner else None,
                        "users": runner.user_count if runner else None,
                        "snapshot": stats.snapshot(), "points": points})

    def charts() -> Response:
        return Response(CHARTS_HTML, mimetype="text/html")

    def figures_csv() -> Response:
        return _csv_response(figures_csv_rows(stats.snapshot()), "tokenswarm_llm.csv")

    def history_csv() -> Response:
        return _csv_response(_history_rows(stats), "tokenswarm_llm_history.csv")

    def save_history(**_kw: Any) -> None:
        opts = environment.parsed_options
        if opts is None or not getattr(opts, "records_file", ""):
            return
        try:
            with open(Path(opts.records_file).with_name(HISTORY_FILE), "w", newline="", encoding="utf-8") as f:
                csv.writer(f).writerows(_history_rows(stats))
        except OSError as exc:  # a full disk: the records matter more
            log.error("tokenswarm: cannot save the live chart history (%s)", exc.strerror or exc)

    for path, view in ((LIVE_PATH, live), (CHARTS_PATH, charts), (CSV_PATH, figures_csv),
                       (HISTORY_CSV_PATH, history_csv)):
        app.add_url_rule(path, endpoint=f"tokenswarm_{view.__name__}", view_func=auth(view))
    events.quitting.add_listener(save_history)
    gevent.spawn(_sample_forever, environment, stats)
    opts = environment.parsed_options
    if opts is not None and getattr(opts, "quit_on_stop", False):
        events.test_stop.add_listener(lambda **_kw: gevent.spawn_later(QUIT_DELAY_S, _quit, environment))
    return stats


def _history_rows(stats: LiveStats) -> list[list[Any]]:
    """The chart's points as CSV rows, a header first."""
    points = list(stats.history)
    return [list(points[0])] + [list(p.values()) for p in points] if points else [["t"]]


def _budget(environment: Environment) -> tuple[int, int, int] | None:
    """The run's requests: planned, sent and ended so far (None before the prompts are dealt)."""
    dispenser = getattr(getattr(environment, "tokenswarm", None), "dispenser", None)
    if dispenser is None or not hasattr(dispenser, "planned"):  # a worker's dispenser only asks its master
        return None
    return dispenser.planned, dispenser.requests_out, dispenser.finished


def _in_flight(environment: Environment) -> int | None:
    dispenser = getattr(getattr(environment, "tokenswarm", None), "dispenser", None)
    return getattr(dispenser, "in_flight", None)


def _sample_forever(environment: Environment, stats: LiveStats) -> None:
    while True:
        gevent.sleep(SAMPLE_INTERVAL_S)
        try:
            runner = environment.runner
            stats.sample(users=runner.user_count if runner else None,
                         spawn_rate=getattr(environment.parsed_options, "spawn_rate", None),  # the form's, as run
                         target=llm_run(environment).target_users)
        except Exception:  # a bug here must not end the chart, nor the run
            log.exception("tokenswarm: live chart sample failed")


def _quit(environment: Environment) -> None:
    """``--quit-on-stop``: end Locust as a headless run ends (final stats, records closed)."""
    log.info("tokenswarm: the test stopped; quitting (--quit-on-stop)")
    if environment.runner is not None:
        environment.runner.quit()
    if environment.web_ui is not None:
        environment.web_ui.stop()  # the web server is the main greenlet in UI mode


def _csv_response(rows: list[list[Any]], filename: str) -> Response:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return Response(out.getvalue(), mimetype="text/csv",
                    headers={"Content-Disposition": f"attachment;filename={filename}"})
