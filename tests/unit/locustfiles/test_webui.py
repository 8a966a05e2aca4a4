"""locustfiles/webui.py: the LLM tab, the routes and ``--quit-on-stop`` on a real Locust web UI.

Locust monkey-patches at import and must come before ``requests``/``ssl``, which this test process
has already imported; so the checks run in a fresh interpreter (``SCRIPT``) that builds Locust's
``Environment``, runner and web UI (not started: Flask's test client calls it), fires
``LlmRun.record_collected`` by hand and prints what it saw as JSON.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from tests.helpers import ROOT

SCRIPT = r"""
import json, time
import gevent
from locust import FastHttpUser, task
from locust.env import Environment
from locust.event import EventHook
from locustfiles.runstate import LlmRun
from locustfiles import options
from locustfiles.records import RequestRecord
from locustfiles.webui import QUIT_DELAY_S, install_webui

class NoUser(FastHttpUser):
    host = "http://127.0.0.1:9"
    @task
    def nothing(self):
        pass

from locust.argument_parser import get_parser
parser = get_parser(default_config_files=[])
options.add_arguments(parser)
env = Environment(user_classes=[NoUser], parsed_options=parser.parse_args(["--quit-on-stop"]))
env.tokenswarm = LlmRun(env)
env.tokenswarm.record_collected = EventHook()
runner = env.create_local_runner()
web_ui = env.create_web_ui("127.0.0.1", 0, delayed_start=True)
install_webui(env)
now = time.time()
env.tokenswarm.record_collected.fire(record=RequestRecord(
    request_id="a", prompt_index=0, worker="local", send_ts=now - 2.0, ttft_ms=40.0, tpot_ms=2.0,
    e2e_ms=46.0, chunk_offsets_ms=[40.0, 42.0, 44.0, 46.0], n_chunks=4, tokens_per_chunk=1.0,
    prompt_tokens=120, output_tokens=4))
env.tokenswarm.record_collected.fire(record=RequestRecord(
    request_id="b", prompt_index=1, worker="local", send_ts=now - 1.0, status="error",
    error_class="timeout", e2e_ms=5.0))
client = web_ui.app.test_client()
out = {}
stats = client.get("/stats/requests")
out["stats_status"] = stats.status_code
out["extended"] = stats.get_json()["extended_stats"]
out["stats_keys"] = sorted(stats.get_json())
out["template"] = {k: web_ui.template_args[k] for k in ("extended_tabs", "extended_tables", "extended_csv_files")}
index = client.get("/")
out["index_has_tab"] = index.status_code == 200 and b'"extended_tabs"' in index.data
out["index_links_charts"] = index.data.count(b'const PATH = "/tokenswarm/charts";') == 1 and index.data.rstrip().endswith(b"</html>")
live = client.get("/tokenswarm/live").get_json()
out["live"] = {"test": live["test"], "users": live["users"], "completed": live["snapshot"]["run"]["completed"],
               "errors_by_class": live["snapshot"]["run"]["errors_by_class"]}
csv = client.get("/tokenswarm/llm.csv")
out["csv"] = [csv.status_code, csv.mimetype, csv.headers.get("Content-Disposition"), csv.get_data(as_text=True)]
env.tokenswarm.live.sample(users=0)
history = client.get("/tokenswarm/llm_history.csv").get_data(as_text=True)
out["history_lines"] = history.splitlines()
later = client.get("/tokenswarm/live?since=1e9&test=%d" % live["test"]).get_json()
out["later_points"] = len(later["points"])
charts = client.get("/tokenswarm/charts")
out["charts"] = [charts.status_code, charts.mimetype, charts.get_data(as_text=True)]
other = client.get("/stats/requests/csv")
out["other_route_untouched"] = b"extended_stats" not in other.data
# --quit-on-stop: a stopped test quits the runner and the web server shortly after.
calls = []
runner.quit = lambda: calls.append("runner.quit")
web_ui.stop = lambda: calls.append("web_ui.stop")
env.events.test_stop.fire(environment=env)
gevent.sleep(QUIT_DELAY_S + 0.5)
out["quit_calls"] = calls
print("RESULT " + json.dumps(out))
"""


@pytest.fixture(scope="module")
def seen() -> dict[str, Any]:
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, cwd=ROOT, timeout=120)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, proc.stdout + proc.stderr
    return json.loads(lines[-1][len("RESULT "):])


def test_llm_tab_is_registered(seen: dict[str, Any]) -> None:
    template = seen["template"]
    assert template["extended_tabs"] == [{"title": "LLM", "key": "llm"}]
    assert [c["key"] for c in template["extended_tables"][0]["structure"]] == ["figure", "now", "level", "run", "how"]
    assert [f["href"] for f in template["extended_csv_files"]] == [
        "./tokenswarm/llm.csv", "./tokenswarm/llm_history.csv", "./tokenswarm/charts"]
    assert seen["index_has_tab"]  # the page Locust renders carries them
    assert seen["index_links_charts"]  # and the script that makes the chart page's address a link, once


def test_rows_ride_in_stats_requests(seen: dict[str, Any]) -> None:
    assert seen["stats_status"] == 200 and "stats" in seen["stats_keys"]  # Locust's own payload is kept
    (table,) = seen["extended"]
    assert table["key"] == "llm"
    rows = {r["figure"]: r for r in table["data"]}
    assert rows["TTFT p50 / p90 / p99 (ms)"]["run"] == "40.0 / 40.0 / 40.0"
    assert rows["ITL p50 / p90 / p99 (ms)"]["run"] == "2.00 / 2.00 / 2.00"
    assert rows["Requests completed"]["run"] == "1" and rows["Errors"]["run"] == "1"
    assert rows["    timeout"]["run"] == "1"
    assert rows["Live charts"]["run"] == "http://localhost/tokenswarm/charts"  # the test client's host
    assert seen["other_route_untouched"]


def test_live_json_and_csvs(seen: dict[str, Any]) -> None:
    assert seen["live"] == {"test": 1, "users": 0, "completed": 1, "errors_by_class": {"timeout": 1}}
    status, mimetype, disposition, text = seen["csv"]
    assert (status, mimetype) == (200, "text/csv") and "attachment" in disposition
    lines = text.splitlines()
    assert lines[0] == "figure,last_10s,this_level,since_start" and "ttft_ms_p50,40.0,,40.0" in lines
    header, point = seen["history_lines"]
    assert header.startswith("t,users,spawn_rate,in_flight,decode_tok_s") and point.split(",")[1] == "0"
    assert seen["later_points"] == 0  # ?since= sends only newer points


def test_chart_page_is_self_contained(seen: dict[str, Any]) -> None:
    status, mimetype, html = seen["charts"]
    assert (status, mimetype) == (200, "text/html")
    assert "<canvas" in html and 'fetch("live"' in html
    assert "http://" not in html and "https://" not in html and "//cdn" not in html  # nothing from elsewhere


def test_quit_on_stop(seen: dict[str, Any]) -> None:
    assert seen["quit_calls"] == ["runner.quit", "web_ui.stop"]
