/**
 * The status page served at `GET /ui`: one self-contained HTML document (styles and script
 * inline, no framework, nothing fetched but `/ui/status.json`), kept in the package as this
 * string so that no build step has to copy assets.
 */
export const STATUS_PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Tributary worker</title>
<link rel="icon" href="data:,">
<style>
  :root { --fg: #1d2430; --muted: #6b7280; --line: #e5e7eb; --ok: #1e8e3e; --warn: #b26a00; --bad: #c62828; --accent: #2563eb; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 13px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); background: #f7f8fa; }
  header { display: flex; gap: 16px; align-items: baseline; padding: 12px 20px; background: #fff; border-bottom: 1px solid var(--line); }
  header h1 { font-size: 16px; margin: 0; }
  header .meta { color: var(--muted); }
  main { padding: 16px 20px; display: grid; gap: 16px; }
  section.connector { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 12px 16px; }
  section.connector h2 { font-size: 15px; margin: 0 0 8px; display: flex; gap: 10px; align-items: center; }
  .class { color: var(--muted); font-weight: normal; font-size: 12px; }
  .state { font-size: 11px; font-weight: 600; padding: 1px 7px; border-radius: 9px; color: #fff; background: var(--muted); }
  .state.RUNNING { background: var(--ok); } .state.PAUSED, .state.RESTARTING, .state.STOPPED { background: var(--warn); }
  .state.FAILED, .state.STALE { background: var(--bad); }
  table { border-collapse: collapse; width: 100%; margin: 6px 0; }
  th, td { text-align: left; padding: 4px 8px; border-bottom: 1px solid var(--line); vertical-align: top; white-space: nowrap; }
  th { color: var(--muted); font-weight: 500; font-size: 12px; }
  td.num { text-align: right; font-variant-numeric: tabular-nums; }
  code { font: 12px ui-monospace, SFMono-Regular, Menlo, monospace; white-space: pre-wrap; word-break: break-all; }
  .task { border-top: 1px dashed var(--line); padding-top: 8px; margin-top: 8px; }
  .charts { display: flex; flex-wrap: wrap; gap: 12px; margin: 6px 0; }
  figure { margin: 0; }
  figcaption { color: var(--muted); font-size: 11px; }
  svg.chart { background: #fbfcfe; border: 1px solid var(--line); border-radius: 4px; }
  svg.chart polyline { fill: none; stroke: var(--accent); stroke-width: 1.5; }
  details pre { max-height: 240px; overflow: auto; background: #fff5f5; padding: 8px; border-radius: 4px; }
  .empty { color: var(--muted); }
  #error { color: var(--bad); }
</style>
</head>
<body>
<header><h1>Tributary worker</h1><span class="meta" id="worker"></span><span class="meta" id="updated"></span><span id="error"></span></header>
<main id="connectors"><p class="empty">Loading…</p></main>
<script>
"use strict";
const $ = (tag, attrs = {}, ...children) => {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  for (const c of children) el.append(c);
  return el;
};
const fmtNum = (n) => (n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US", { maximumFractionDigits: 1 }));
const fmtAge = (ms) => {
  if (ms === null || ms === undefined) return "–";
  const s = ms / 1000;
  return s < 60 ? s.toFixed(1) + " s" : s < 3600 ? (s / 60).toFixed(1) + " min" : (s / 3600).toFixed(1) + " h";
};
const fmtBytes = (b) => (b < 1024 ? b + " B" : b < 1048576 ? (b / 1024).toFixed(1) + " KiB" : (b / 1048576).toFixed(1) + " MiB");
const SVG = "http://www.w3.org/2000/svg";
function chart(name, samples, pick, unit) {
  const w = 220, h = 56;
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", "chart");
  svg.setAttribute("data-chart", name);
  svg.setAttribute("width", w);
  svg.setAttribute("height", h);
  const points = samples.map((s) => [s.t, pick(s)]).filter(([, v]) => v !== null && v !== undefined);
  const last = points.length ? points[points.length - 1][1] : null;
  if (points.length >= 1) {
    const t0 = Math.min(...points.map((p) => p[0])), t1 = Math.max(...points.map((p) => p[0]));
    const vMax = Math.max(...points.map((p) => p[1]), 1e-9);
    const line = document.createElementNS(SVG, "polyline");
    line.setAttribute("points", points.map(([t, v]) => {
      const x = t1 === t0 ? w - 2 : 2 + ((t - t0) / (t1 - t0)) * (w - 4);
      const y = h - 3 - (v / vMax) * (h - 8);
      return x.toFixed(1) + "," + y.toFixed(1);
    }).join(" "));
    svg.append(line);
  }
  return $("figure", {}, svg, $("figcaption", {}, name + ": " + (last === null ? "–" : fmtNum(last) + " " + unit) + " (last hour)"));
}
function taskView(c, t) {
  const m = t.metrics || {};
  const box = $("div", { class: "task", "data-task": c.name + "/" + t.id });
  const stale = m.stale ? $("span", { class: "state STALE" }, "STALE OFFSET") : "";
  box.append($("h3", {}, "Task " + t.id + " ", $("span", { class: "state " + t.state, "data-state": t.state }, t.state), " ", stale));
  if (t.trace) box.append($("details", {}, $("summary", {}, "trace"), $("pre", {}, $("code", {}, t.trace))));
  const lag = m.sourceLag ? fmtNum(m.sourceLag.position) + " " + (m.sourceLag.unit || "bytes") + (m.sourceLag.timeMs !== undefined ? " / " + fmtAge(m.sourceLag.timeMs) : "") : "–";
  const rate = t.history.length ? t.history[t.history.length - 1].rate : null;
  const stats = $("table", { class: "stats" },
    $("tr", {}, ...["written", "records/s", "in flight", "offset age", "uncommitted", "last flush", "flush failures", "source lag", "heartbeats", "last heartbeat", "skipped ticks"].map((h) => $("th", {}, h))),
    $("tr", {},
      $("td", { class: "num", "data-field": "written" }, fmtNum(m.writeTotal)),
      $("td", { class: "num" }, fmtNum(rate)),
      $("td", { class: "num" }, fmtNum(m.activeCount)),
      $("td", { class: "num", "data-field": "offset-age" }, fmtAge(m.offsetAgeMs)),
      $("td", { class: "num" }, fmtNum(m.uncommittedRecords) + " / " + fmtBytes(m.uncommittedBytes || 0)),
      $("td", { class: "num" }, m.sinceLastFlushMs === undefined ? "–" : fmtAge(m.sinceLastFlushMs) + " ago"),
      $("td", { class: "num" }, fmtNum(m.flushFailures)),
      $("td", { class: "num" }, lag),
      $("td", { class: "num" }, fmtNum(m.heartbeatRecords)),
      $("td", { class: "num" }, m.heartbeatLastTimestamp === undefined ? "–" : fmtAge(Date.now() - m.heartbeatLastTimestamp) + " ago"),
      $("td", { class: "num" }, fmtNum(m.heartbeatTicksSkipped))));
  box.append(stats);
  box.append($("div", { class: "charts" },
    chart("offset age", t.history, (s) => s.offsetAge, "s"),
    chart("source lag", t.history, (s) => s.lag, (m.sourceLag && m.sourceLag.unit) || "bytes"),
    chart("throughput", t.history, (s) => s.rate, "records/s"),
    chart("heartbeat age", t.history, (s) => s.heartbeatAge, "s")));
  const parts = (m.partitions || []);
  const offsets = $("table", { class: "offsets" }, $("tr", {}, $("th", {}, "source partition"), $("th", {}, "committed offset"), $("th", {}, "age")));
  for (const p of parts) {
    offsets.append($("tr", {}, $("td", {}, $("code", {}, p.partition)), $("td", { "data-field": "offset" }, $("code", {}, JSON.stringify(p.offset))), $("td", { class: "num" }, fmtAge(p.offsetAgeMs))));
  }
  if (parts.length === 0) offsets.append($("tr", {}, $("td", { class: "empty", colspan: "3" }, "no offset committed yet")));
  if (m.otherPartitions) offsets.append($("tr", {}, $("td", { class: "empty", colspan: "3" }, "and " + m.otherPartitions + " more partitions")));
  box.append(offsets);
  return box;
}
function render(data) {
  document.getElementById("worker").textContent = "worker " + data.workerId;
  document.getElementById("updated").textContent = "updated " + new Date(data.time).toLocaleTimeString();
  const root = document.getElementById("connectors");
  const sections = data.connectors.map((c) => {
    const s = $("section", { class: "connector", "data-connector": c.name });
    s.append($("h2", {}, c.name, $("span", { class: "state " + c.state, "data-state": c.state }, c.state), $("span", { class: "class" }, c.connectorClass)));
    if (c.trace) s.append($("details", {}, $("summary", {}, "trace"), $("pre", {}, $("code", {}, c.trace))));
    for (const t of c.tasks) s.append(taskView(c, t));
    if (c.tasks.length === 0) s.append($("p", { class: "empty" }, "no tasks"));
    return s;
  });
  root.replaceChildren(...(sections.length ? sections : [$("p", { class: "empty" }, "No connectors.")]));
}
async function refresh() {
  try {
    const res = await fetch("/ui/status.json", { cache: "no-store" });
    if (!res.ok) throw new Error("GET /ui/status.json answered " + res.status);
    render(await res.json());
    document.getElementById("error").textContent = "";
  } catch (e) {
    document.getElementById("error").textContent = String(e.message || e);
  }
}
refresh();
setInterval(refresh, 2000);
</script>
</body>
</html>
`;
