"""The live chart page served at ``/tokenswarm/charts`` (one self-contained HTML document), and the script
that makes its address a link in Locust's own page.

Stage: load (web UI). Inline CSS and JS, ``<canvas>`` drawing, nothing fetched from anywhere but this
Locust (``./live`` once a second): it works on a machine with no internet.
"""

LINK_SCRIPT = """<script>
/* tokenswarm: Locust's tables render text only, so the LLM tab's chart-page address is made a link here.
   React owns the cell's text node, so only the cell's attributes change: a re-render never shows stale text. */
(() => {
  "use strict";
  const PATH = "%(path)s";
  const mark = () => {
    for (const td of document.querySelectorAll("td")) {
      const text = td.textContent.trim(), link = /^https?:[/][/]/.test(text) && text.endsWith(PATH);
      if (link && td.dataset.tokenswarmLink !== text) {
        td.dataset.tokenswarmLink = text;
        td.setAttribute("role", "link");
        td.tabIndex = 0;
        td.title = "open the live LLM charts";
        Object.assign(td.style, {cursor: "pointer", textDecoration: "underline", color: "#2456c8"});
      } else if (!link && td.dataset.tokenswarmLink) {
        delete td.dataset.tokenswarmLink;
        for (const name of ["role", "tabindex", "title"]) td.removeAttribute(name);
        Object.assign(td.style, {cursor: "", textDecoration: "", color: ""});
      }
    }
  };
  const open = (event) => {
    const td = event.target.closest && event.target.closest("td[data-tokenswarm-link]");
    if (td && (event.type === "click" || event.key === "Enter")) window.open(td.dataset.tokenswarmLink, "_blank");
  };
  document.addEventListener("click", open);
  document.addEventListener("keydown", open);
  new MutationObserver(mark).observe(document.body, {childList: true, subtree: true, characterData: true});
})();
</script>"""
"""Added to Locust's index page before ``</body>`` (``webui.install_webui``); ``%(path)s``: the chart page's path."""

CHARTS_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<title>tokenswarm: live LLM charts</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="icon" href="data:,">
<style>
 body { font: 14px system-ui, sans-serif; margin: 16px 24px; background: #f6f7f9; color: #1d2330; }
 h1 { font-size: 20px; margin: 0 0 2px; } #status { color: #5b6475; margin-bottom: 12px; }
 .figs { display: flex; flex-wrap: wrap; gap: 10px; margin-bottom: 14px; }
 .fig { background: #fff; border: 1px solid #dde1e8; border-radius: 6px; padding: 8px 14px; min-width: 120px; }
 .fig b { display: block; font-size: 22px; } .fig span { color: #5b6475; font-size: 12px; }
 canvas { display: block; width: 100%; height: 240px; background: #fff; border: 1px solid #dde1e8;
          border-radius: 6px; margin-bottom: 12px; }
 a { color: #2456c8; } footer { color: #5b6475; font-size: 12px; }
</style></head>
<body>
<h1>tokenswarm &middot; live LLM charts</h1>
<div id="status">connecting&hellip;</div>
<div class="figs" id="figs"></div>
<canvas id="tokens"></canvas>
<canvas id="latency"></canvas>
<canvas id="users"></canvas>
<footer><a href="../?tab=llm">back to Locust (LLM tab)</a> &middot; <a href="llm.csv">figures CSV</a> &middot;
 <a href="llm_history.csv">history CSV</a> &middot; "now" figures cover the requests that ended in the last
 <span id="win">10</span> s; time is seconds since the test started (users running).</footer>
<script>
"use strict";
let points = [], test = null, lastT = null;
const MAX_POINTS = 3600;
const CHARTS = [
  {id: "tokens", title: "Tokens/s (last 10 s)", series: [
    {key: "decode_tok_s", label: "decode", color: "#2456c8"},
    {key: "prefill_tok_s", label: "prefill", color: "#e07b00"}]},
  {id: "latency", title: "Latency, ms (last 10 s)", series: [
    {key: "ttft_p50_ms", label: "TTFT p50", color: "#1a9c5b"},
    {key: "ttft_p99_ms", label: "TTFT p99", color: "#9bd3b4"},
    {key: "tpot_p50_ms", label: "TPOT p50", color: "#8a3ffc"}]},
  {id: "users", title: "Users and requests in flight", series: [
    {key: "users", label: "users", color: "#1d2330"},
    {key: "in_flight", label: "in flight", color: "#d0343f", dash: [6, 4]}]}];

function fmt(v, d) {
  if (v === null || v === undefined) return "\\u2014";
  return v.toLocaleString(undefined, {minimumFractionDigits: d, maximumFractionDigits: d});
}
function axis(v) {  // a round top (10% headroom) and step, about 5 gridlines
  const raw = (v > 0 ? v * 1.1 : 1) / 5, e = Math.pow(10, Math.floor(Math.log10(raw)));
  const step = [1, 2, 5, 10].map(m => m * e).find(s => s >= raw);
  return {top: Math.ceil(v * 1.1 / step) * step || step, step: step,
          digits: Math.max(0, -Math.floor(Math.log10(step) + 1e-9))};
}
function draw(chart) {
  const c = document.getElementById(chart.id), dpr = window.devicePixelRatio || 1;
  const w = c.clientWidth, h = c.clientHeight;
  c.width = w * dpr; c.height = h * dpr;
  const g = c.getContext("2d");
  g.scale(dpr, dpr); g.clearRect(0, 0, w, h);
  const L = 64, R = 18, T = 30, B = 26, pw = w - L - R, ph = h - T - B;
  const t0 = points.length ? points[0].t : 0;
  const t1 = Math.max(points.length ? points[points.length - 1].t : 0, t0 + 10);
  let ymax = 0;
  for (const s of chart.series) for (const p of points) if (p[s.key] > ymax) ymax = p[s.key];
  const ax = axis(ymax);
  const x = t => L + (t - t0) / (t1 - t0) * pw, y = v => T + ph - v / ax.top * ph;
  g.font = "11px system-ui, sans-serif"; g.lineWidth = 1;
  for (let v = 0; v <= ax.top + ax.step / 2; v += ax.step) {
    g.strokeStyle = "#eceef2"; g.beginPath(); g.moveTo(L, y(v)); g.lineTo(L + pw, y(v)); g.stroke();
    g.fillStyle = "#5b6475"; g.textAlign = "right"; g.fillText(fmt(v, ax.digits), L - 6, y(v) + 4);
  }
  g.textAlign = "center";
  for (let i = 0; i <= 5; i++) {
    const t = t0 + (t1 - t0) * i / 5;
    g.fillText(Math.round(t) + " s", x(t), T + ph + 16);
  }
  g.textAlign = "left"; g.fillStyle = "#1d2330"; g.font = "bold 13px system-ui, sans-serif";
  g.fillText(chart.title, L, 18);
  let lx = L + g.measureText(chart.title).width + 20;
  g.font = "12px system-ui, sans-serif";
  for (const s of chart.series) {
    g.fillStyle = s.color; g.fillRect(lx, 9, 14, 4); g.fillStyle = "#1d2330";
    g.fillText(s.label, lx + 18, 16); lx += g.measureText(s.label).width + 36;
    g.strokeStyle = s.color; g.lineWidth = 2; g.setLineDash(s.dash || []); g.beginPath();
    let pen = false;
    for (const p of points) {
      const v = p[s.key];
      if (v === null || v === undefined) { pen = false; continue; }
      if (pen) g.lineTo(x(p.t), y(v)); else g.moveTo(x(p.t), y(v));
      pen = true;
    }
    g.stroke();
    g.setLineDash([]);
  }
}
function figures(data) {
  const now = data.snapshot.now, run = data.snapshot.run, p50 = m => m ? m.p50 : null;
  const figs = [
    ["decode tok/s (10 s)", fmt(now.decode_tok_s, 1)], ["prefill tok/s (10 s)", fmt(now.prefill_tok_s, 1)],
    ["decode tok/s (since start)", fmt(run.decode_tok_s, 1)], ["TTFT p50 ms (10 s)", fmt(p50(now.ttft_ms), 1)],
    ["TPOT p50 ms (10 s)", fmt(p50(now.tpot_ms), 2)], ["completed", fmt(run.completed, 0)],
    ["in flight", fmt(data.snapshot.in_flight, 0)], ["errors", fmt(run.errors, 0)], ["users", fmt(data.users, 0)]];
  document.getElementById("figs").innerHTML = figs.map(
    ([k, v]) => '<div class="fig"><b>' + v + "</b><span>" + k + "</span></div>").join("");
  document.getElementById("win").textContent = data.snapshot.window_s;
}
async function poll() {
  try {
    const q = test === null || lastT === null ? "" : "?since=" + lastT + "&test=" + test;
    const data = await (await fetch("live" + q, {cache: "no-store"})).json();
    if (data.test !== test) { points = []; test = data.test; }
    points = points.concat(data.points).slice(-MAX_POINTS);
    if (points.length) lastT = points[points.length - 1].t;
    figures(data);
    document.getElementById("status").textContent = "test " + (data.state || "?") + ", updated " +
      new Date().toLocaleTimeString();
    CHARTS.forEach(draw);
  } catch (e) {
    document.getElementById("status").textContent = "no answer from Locust (the run may have ended): " + e;
  }
}
poll();
setInterval(poll, 1000);
window.addEventListener("resize", () => CHARTS.forEach(draw));
</script>
</body></html>
"""
