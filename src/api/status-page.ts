// The HTML status page (GET /): one self-contained document, no scripts from elsewhere, no build
// step, rendered with Hono's escaping `html` helper. It refreshes itself every 5 s.

import { html, raw } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";
import type { Firing, Job } from "../core/model.ts";
import type { StatusSnapshot } from "../core/service.ts";

const iso = (ms: number | null) => (ms === null ? "—" : new Date(ms).toISOString().replace(".000Z", "Z"));

function inZone(ms: number, zone: string): string {
  return new Intl.DateTimeFormat("en-GB", {
    timeZone: zone,
    dateStyle: "medium",
    timeStyle: "medium",
  }).format(new Date(ms));
}

function ago(ms: number, nowMs: number): string {
  const s = Math.max(0, Math.round((nowMs - ms) / 1000));
  return s < 120 ? `${s} s ago` : `${Math.round(s / 60)} min ago`;
}

function scheduleText(job: Job): string {
  const s = job.spec.schedule;
  if ("cron" in s) return `cron ${s.cron}`;
  if ("every" in s) return `every ${s.every}`;
  return `at ${s.at}`;
}

const STYLE = `
  :root { color-scheme: light; --ink: #1f2933; --muted: #6b7785; --line: #e3e7ec; --bg: #f6f8fa; --accent: #2563eb; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--ink); background: var(--bg); }
  header { background: #111827; color: #f9fafb; padding: 14px 24px; display: flex; align-items: baseline; gap: 16px; }
  header h1 { font-size: 18px; margin: 0; letter-spacing: .3px; }
  header .sub { color: #9ca3af; font-size: 13px; }
  main { padding: 20px 24px; display: grid; gap: 18px; grid-template-columns: repeat(auto-fit, minmax(420px, 1fr)); }
  section { background: #fff; border: 1px solid var(--line); border-radius: 8px; padding: 14px 16px; }
  section.wide { grid-column: 1 / -1; }
  h2 { font-size: 13px; text-transform: uppercase; letter-spacing: .6px; color: var(--muted); margin: 0 0 10px; }
  .cards { display: flex; gap: 12px; flex-wrap: wrap; }
  .card { flex: 1 1 120px; border: 1px solid var(--line); border-radius: 6px; padding: 10px 12px; }
  .card .v { font-size: 22px; font-weight: 600; }
  .card .k { color: var(--muted); font-size: 12px; }
  table { width: 100%; border-collapse: collapse; font-size: 13px; }
  th { text-align: left; color: var(--muted); font-weight: 500; border-bottom: 1px solid var(--line); padding: 4px 6px; }
  td { border-bottom: 1px solid var(--line); padding: 4px 6px; vertical-align: top; }
  td.mono, .mono { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12px; }
  a { color: var(--accent); text-decoration: none; }
  .state { font-weight: 600; font-size: 12px; padding: 1px 6px; border-radius: 4px; background: #eef2f7; }
  .DONE { background: #dcfce7; color: #166534; } .DEAD { background: #fee2e2; color: #991b1b; }
  .RUNNING, .CLAIMED { background: #dbeafe; color: #1e40af; } .RETRYING { background: #fef3c7; color: #92400e; }
  .SKIPPED, .CANCELLED { background: #f3f4f6; color: #4b5563; }
  .alive { color: #166534; } .dead { color: #991b1b; }
  .empty { color: var(--muted); font-style: italic; }
  svg { width: 100%; height: 140px; display: block; }
  .axis { display: flex; justify-content: space-between; color: var(--muted); font-size: 11px; }
`;

function stateTag(f: Firing): HtmlEscapedString | Promise<HtmlEscapedString> {
  return html`<span class="state ${f.state}">${f.state}</span>`;
}

function firingRows(firings: Firing[], nowMs: number): HtmlEscapedString | Promise<HtmlEscapedString> {
  if (firings.length === 0) return html`<p class="empty">none</p>`;
  return html`<table>
    <tr><th>firing</th><th>job</th><th>scheduled (UTC)</th><th>state</th><th>tries</th><th>error</th></tr>
    ${firings.map(
      (f) => html`<tr>
        <td class="mono"><a href="/v1/firings/${f.id}">${f.id.slice(0, 14)}…</a></td>
        <td class="mono">${f.jobId}</td>
        <td class="mono" title="${ago(f.scheduledAt, nowMs)}">${iso(f.scheduledAt)}</td>
        <td>${stateTag(f)}</td><td>${f.attempts}</td><td>${f.lastError ?? ""}</td>
      </tr>`,
    )}
  </table>`;
}

/** Inline SVG bar chart of the next 24 h, one bar per minute, scaled to the busiest minute. */
function loadChart(perMinute: number[], nowMs: number): HtmlEscapedString | Promise<HtmlEscapedString> {
  const max = Math.max(1, ...perMinute);
  const total = perMinute.reduce((a, b) => a + b, 0);
  const bars = perMinute
    .map((n, i) => (n === 0 ? "" : `<rect x="${i}" y="${100 - (n / max) * 100}" width="1" height="${(n / max) * 100}"/>`))
    .join("");
  const start = Math.floor(nowMs / 60_000) * 60_000;
  const ticks = [0, 6, 12, 18, 24].map((h) => new Date(start + h * 3_600_000).toISOString().slice(11, 16) + "Z");
  return html`<p class="mono">busiest minute: ${max} job${max === 1 ? "" : "s"} · ${total} next firings in 24 h</p>
    <svg viewBox="0 0 1440 100" preserveAspectRatio="none" role="img" aria-label="jobs due per minute, next 24 h">
      <rect x="0" y="0" width="1440" height="100" fill="#f8fafc"/>
      <g fill="#2563eb">${raw(bars)}</g>
    </svg>
    <div class="axis">${ticks.map((t) => html`<span>${t}</span>`)}</div>`;
}

export function renderStatusPage(s: StatusSnapshot): HtmlEscapedString | Promise<HtmlEscapedString> {
  const c = s.cluster;
  const alive = c.nodes.filter((n) => n.alive).length;
  return html`<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta http-equiv="refresh" content="5">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>cronwheel · ${c.leader ?? "no leader"}</title>
  <style>${raw(STYLE)}</style>
</head>
<body>
  <header><h1>cronwheel</h1><span class="sub">node ${s.nodeId} · ${iso(s.nowMs)} · refreshes every 5 s</span></header>
  <main>
    <section class="wide">
      <div class="cards">
        <div class="card"><div class="k">leader</div><div class="v mono" id="leader">${c.leader ?? "none"}</div></div>
        <div class="card"><div class="k">epoch</div><div class="v">${c.epoch}</div></div>
        <div class="card"><div class="k">nodes alive</div><div class="v">${alive} / ${c.nodes.length}</div></div>
        <div class="card"><div class="k">backlog (due, not finished)</div><div class="v" id="backlog">${s.backlog}</div></div>
        <div class="card"><div class="k">lateness p50 · p99 (5 min, this node)</div>
          <div class="v">${s.lateness ? `${s.lateness.p50} · ${s.lateness.p99} ms` : "—"}</div></div>
      </div>
    </section>
    <section class="wide">
      <h2>Upcoming load: jobs due per minute, next 24 h</h2>
      ${loadChart(s.upcomingPerMinute, s.nowMs)}
    </section>
    <section>
      <h2>Nodes</h2>
      <table><tr><th>node</th><th>address</th><th>last heartbeat</th><th></th></tr>
      ${c.nodes.map(
        (n) => html`<tr><td class="mono">${n.id}${n.id === c.leader ? " ★" : ""}</td><td class="mono">${n.address}</td>
          <td>${ago(n.lastSeenAt, s.nowMs)}</td><td class="${n.alive ? "alive" : "dead"}">${n.alive ? "alive" : "gone"}</td></tr>`,
      )}
      </table>
    </section>
    <section>
      <h2>Due next</h2>
      ${s.dueNext.length === 0
        ? html`<p class="empty">no job is scheduled</p>`
        : html`<table><tr><th>job</th><th>schedule</th><th>in its zone</th><th>UTC</th></tr>
          ${s.dueNext.map((j) => {
            const zone = "timezone" in j.spec.schedule ? j.spec.schedule.timezone : "UTC";
            return html`<tr><td class="mono"><a href="/v1/jobs/${j.spec.id}">${j.spec.id}</a></td><td class="mono">${scheduleText(j)}</td>
              <td>${inZone(j.nextFireAt!, zone)} <span class="mono">${zone}</span></td><td class="mono">${iso(j.nextFireAt)}</td></tr>`;
          })}</table>`}
    </section>
    <section class="wide" id="recent">
      <h2>Recent firings</h2>
      ${firingRows(s.recent, s.nowMs)}
    </section>
    <section class="wide" id="dead">
      <h2>Failing (DEAD)</h2>
      ${firingRows(s.dead, s.nowMs)}
    </section>
  </main>
</body>
</html>`;
}

export function renderLoginPage(failed: boolean): HtmlEscapedString | Promise<HtmlEscapedString> {
  return html`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>cronwheel · sign in</title><style>${raw(STYLE)}</style></head>
<body><header><h1>cronwheel</h1><span class="sub">this node needs its API token</span></header>
<main><section><h2>Sign in</h2>
  ${failed ? html`<p class="dead">That token is not right.</p>` : ""}
  <form method="post" action="/login">
    <input type="password" name="token" autocomplete="current-password" placeholder="API token" style="padding:6px;width:260px" autofocus>
    <button type="submit" style="padding:6px 12px">Open the status page</button>
  </form>
</section></main></body></html>`;
}
