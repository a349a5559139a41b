// Registration at scale: N jobs (default 1,000,000; two thirds daily crons in 20 zones, one
// third one-shots over the next 24 h) through POST /v1/jobs/batch, 10,000 per request, K
// requests in flight, on one real node with a fresh embedded db. Targets: 1,000,000 in < 20 s;
// the node's RSS with them registered < 250 MB. Reports total time, jobs/s, per-request
// p50/max, the node's RSS once registration has settled and its peak, and checks the count in
// the db file after the node stopped. Jobs that fall due meanwhile go to a receiver.
// Run: npx bun bench/register-1m.ts [--n 1000000] [--parallel 2]

import { Database } from "bun:sqlite";
import { existsSync, statSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { benchLog, gitState, NODE_FLAGS, NODE_FLAGS_HELP, runBench, scratchDir, wholeNumber } from "./lib/cli.ts";
import { mixedJob } from "./lib/jobs.ts";
import { peakRssMb, rssMb, startNodeProcess, type NodeProcess } from "./lib/node.ts";
import { startReceiver, type ReceiverHandle } from "./lib/receiver.ts";
import { BATCH_MAX, registerJobs } from "./lib/register.ts";
import { dist, emit, fmtDist, fmtMs, fmtRate, ratePerSec, round } from "./lib/report.ts";

const { values: flags } = parseArgs({
  args: process.argv.slice(2),
  options: {
    n: { type: "string", default: "1000000" },
    parallel: { type: "string", default: "2" },
    chunk: { type: "string", default: String(BATCH_MAX) },
    "settle-ms": { type: "string", default: "10000" },
    ...NODE_FLAGS,
  },
  strict: true,
});

if (flags.help) {
  console.log(`usage: bun bench/register-1m.ts [flags]
  --n N            jobs to register (default 1000000)
  --parallel K     batch requests in flight (default 2)
  --chunk C        jobs per request (default and max 10000)
  --settle-ms MS   after registration, wait at most this long for the node's RSS to settle (default 10000)
${NODE_FLAGS_HELP}`);
  process.exit(0);
}

const N = wholeNumber("n", flags.n!);
const PARALLEL = wholeNumber("parallel", flags.parallel!);
const CHUNK = Math.min(BATCH_MAX, wholeNumber("chunk", flags.chunk!));
const SETTLE_MS = wholeNumber("settle-ms", flags["settle-ms"]!, 0);
const TARGET_MS = 20_000;
const TARGET_RSS_MB = 250;
const log = benchLog("register-1m");

const scratch = scratchDir("register");
const dbPath = join(scratch.dir, "cw.db");
let receiver: ReceiverHandle | null = null;
let node: NodeProcess | null = null;

/** Waits until the node's RSS moves by less than 1 MB over a second (GC and the db's caches done), or `maxMs`. */
async function settledRss(pid: number, maxMs: number): Promise<{ rss_mb: number | null; settle_ms: number }> {
  const t0 = Date.now();
  let prev = rssMb(pid);
  while (Date.now() - t0 < maxMs) {
    await Bun.sleep(1_000);
    const now = rssMb(pid);
    if (now === null || prev === null || Math.abs(now - prev) < 1) return { rss_mb: now, settle_ms: Date.now() - t0 };
    prev = now;
  }
  return { rss_mb: rssMb(pid), settle_ms: Date.now() - t0 };
}

/** Jobs as the node stored them, read from the db file after it stopped (paging GET /v1/jobs through a million is slow). */
function storedJobs(): { jobs_stored: number | null; jobs_scheduled: number | null; db_mb: number | null; store_error?: string } {
  try {
    const db = new Database(dbPath, { readonly: true });
    const all = db.query("SELECT COUNT(*) AS n FROM jobs").get() as { n: number };
    const scheduled = db.query("SELECT COUNT(*) AS n FROM jobs WHERE next_fire_at IS NOT NULL").get() as { n: number };
    db.close();
    // The write-ahead log may still hold much of it.
    const bytes = [dbPath, `${dbPath}-wal`].reduce((sum, p) => sum + (existsSync(p) ? statSync(p).size : 0), 0);
    return { jobs_stored: all.n, jobs_scheduled: scheduled.n, db_mb: round(bytes / 1024 / 1024, 1) };
  } catch (err) {
    return { jobs_stored: null, jobs_scheduled: null, db_mb: null, store_error: String(err) };
  }
}

async function main(): Promise<number> {
  const git = gitState();
  receiver = await startReceiver({ stderrPath: join(scratch.dir, "receiver.stderr") });
  const cw = await startNodeProcess({
    dir: scratch.dir,
    db: `file:${dbPath}`,
    name: "node",
    flags: ["--log-level", "warn", ...flags["node-arg"]!],
    bunArgs: flags["bun-arg"]!,
    onSpawn: (n) => {
      node = n;
    },
  });
  const rssBefore = rssMb(cw.pid);
  log(`node ${cw.url} (pid ${cw.pid}, rss ${rssBefore} MB), dir ${scratch.dir}; registering ${N} jobs, ${CHUNK} per request, ${PARALLEL} in flight`);

  const now = Date.now();
  const target = { url: `${receiver.url}/hook` };
  const reg = await registerJobs(cw.url, N, (j) => mixedJob(j, now, target), { chunk: CHUNK, parallel: PARALLEL });
  log(`registered in ${reg.ms} ms (${fmtRate(ratePerSec(N, reg.ms))}), ${reg.failures.length} failed request(s); waiting for the rss to settle`);
  const settled = await settledRss(cw.pid, SETTLE_MS);
  const peak = peakRssMb(cw.pid);
  const crashed = cw.exitCode() !== null;
  const delivered = await receiver.count();
  const duringRun = cw.problems();
  await cw.stop();
  const stored = storedJobs();
  const problems = [...duringRun, ...cw.problems().slice(duringRun.length).filter((l) => !l.includes('"shutting down"'))];

  const requests = dist(reg.request_ms.map((ms) => round(ms)));
  const countOk = stored.jobs_stored === N;
  const failed = reg.failures.length > 0 || !countOk || crashed;
  const rate = ratePerSec(N, reg.ms);
  emit(
    "register-1m",
    {
      n: N,
      ...git,
      parallel: PARALLEL,
      chunk: CHUNK,
      registration_ms: reg.ms,
      jobs_per_s: rate,
      requests: reg.requests,
      failed_requests: reg.failures.length,
      first_failure: reg.failures[0] ?? null,
      request_ms: requests,
      client_build_ms: reg.build_ms,
      target_ms: TARGET_MS,
      time_ok: reg.ms < TARGET_MS,
      node_rss_before_mb: rssBefore,
      node_rss_after_mb: settled.rss_mb,
      rss_settle_ms: settled.settle_ms,
      node_peak_rss_mb: peak,
      target_rss_mb: TARGET_RSS_MB,
      rss_ok: settled.rss_mb === null ? null : settled.rss_mb < TARGET_RSS_MB,
      ...stored,
      count_ok: countOk,
      delivered_meanwhile: delivered,
      node_crashed: crashed,
      node_stderr_problems: problems.length,
    },
    [
      `${N} jobs in ${fmtMs(reg.ms)} (${fmtRate(rate)}; target < ${fmtMs(TARGET_MS)}), ${reg.requests} requests of ${CHUNK}, ${PARALLEL} in flight: ${fmtDist(requests)}`,
      `client built the bodies in ${fmtMs(reg.build_ms)}; ${reg.failures.length} request(s) failed${reg.failures[0] ? `, first: ${reg.failures[0].status} ${reg.failures[0].error.slice(0, 200)}` : ""}`,
      `node rss ${rssBefore ?? "-"} MB before, ${settled.rss_mb ?? "-"} MB after (settled in ${fmtMs(settled.settle_ms)}; target < ${TARGET_RSS_MB} MB), peak ${peak ?? "-"} MB`,
      `db: ${stored.jobs_stored ?? "-"} jobs stored (${stored.jobs_scheduled ?? "-"} scheduled), ${stored.db_mb ?? "-"} MB${stored.store_error ? `, ${stored.store_error}` : ""}; ` +
        `${delivered} firings delivered meanwhile`,
      `node stderr: ${problems.length} warn/error/other line(s)${crashed ? `; NODE EXITED (code ${cw.exitCode()})` : ""}`,
      ...problems.slice(0, 10).map((l) => `  | ${l.length > 400 ? l.slice(0, 400) + "..." : l}`),
      ...(flags.keep ? [`kept ${scratch.dir}`] : []),
      failed ? "RESULT: FAIL (a request failed, the stored count is wrong, or the node exited)" : "RESULT: ok",
    ],
  );
  return failed ? 1 : 0;
}

await runBench("register-1m", main, async () => {
  await Promise.allSettled([(node as NodeProcess | null)?.stop(), receiver?.stop()]); // node is set by onSpawn, which tsc does not see
  if (!flags.keep) scratch.remove();
});
