// Status page at scale: registers N jobs (default 1,000,000: crons in 20 zones and one-shots
// spread over 24 h) on one node through the batch API, then fetches GET / several times and
// prints its size and render time. Run: npx bun bench/status-page.ts [--n 1000000]

import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { chromium } from "playwright-core";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { mixedJob } from "./lib/jobs.ts";
import { peakRssMb, startNodeProcess } from "./lib/node.ts";
import { dist, emit, fmtDist, fmtMs } from "./lib/report.ts";

const { values: flags } = parseArgs({ args: process.argv.slice(2), options: { n: { type: "string", default: "1000000" } }, strict: true });
const n = Number(flags.n);

const dir = mkdtempSync(join(tmpdir(), "cronwheel-status-"));
const node = await startNodeProcess({ dir, db: `file:${join(dir, "cw.db")}`, name: "node", flags: ["--log-level", "warn"] });
try {
  const now = Date.now();
  const started = Date.now();
  for (let i = 0; i < n; i += 10_000) {
    const jobs = Array.from({ length: Math.min(10_000, n - i) }, (_, k) => mixedJob(i + k, now, { url: "http://127.0.0.1:9/never" }));
    const r = await fetch(`${node.url}/v1/jobs/batch`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jobs }) });
    if (r.status !== 201) throw new Error(`batch ${i}: ${r.status} ${await r.text()}`);
  }
  const registerMs = Date.now() - started;
  const times: number[] = [];
  let bytes = 0;
  for (let k = 0; k < 10; k++) {
    const t0 = performance.now();
    const body = await (await fetch(`${node.url}/`)).text();
    times.push(performance.now() - t0);
    bytes = body.length;
    await Bun.sleep(200);
  }
  // The same page in a real browser (Debian chromium), when it is installed.
  let browserMs: number | null = null;
  if (existsSync("/usr/bin/chromium")) {
    const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"] });
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const t0 = performance.now();
    await page.goto(`${node.url}/`, { waitUntil: "load" });
    browserMs = Math.round(performance.now() - t0);
    await browser.close();
  }
  const first = times[0]!;
  const rest = dist(times.slice(1));
  emit(
    "status-page",
    { jobs: n, register_ms: registerMs, page_bytes: bytes, first_render_ms: Math.round(first), render_ms: rest, browser_load_ms: browserMs, node_peak_rss_mb: peakRssMb(node.pid) },
    [
      `${n} jobs registered in ${fmtMs(registerMs)}`,
      `GET /: ${bytes} bytes; first ${fmtMs(first)} (24 h load chart computed), then ${fmtDist(rest)} (chart cached 30 s)`,
      `in chromium, from navigation to load: ${browserMs === null ? "not measured (no /usr/bin/chromium)" : fmtMs(browserMs)}`,
    ],
  );
} finally {
  await node.stop();
  rmSync(dir, { recursive: true, force: true });
}
