// Spike bench (SPEC promise 1): N one-shot jobs all due at the same instant T on one real node
// (separate process, fresh embedded db) delivering to a receiver in another process. Measures
// registration time, lateness p50/p90/p99/max, drain time and rate, losses and duplicates.
// Run: npx bun bench/spike.ts --n 10000   (also --n 100000; --help for the other flags)

import { Database } from "bun:sqlite";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { cpuMs, peakRssMb, ROOT, startNodeProcess, type NodeProcess } from "./lib/node.ts";
import { startReceiver, type ReceiverHandle } from "./lib/receiver.ts";
import { analyzeDeliveries, emit, fmtDist, fmtMs, fmtRate, ratePerSec } from "./lib/report.ts";

const BATCH_MAX = 10_000;

const { values: flags } = parseArgs({
  args: process.argv.slice(2),
  options: {
    n: { type: "string", default: "10000" },
    "lead-ms": { type: "string" },
    chunk: { type: "string", default: String(BATCH_MAX) },
    "timeout-ms": { type: "string", default: "120000" },
    "settle-ms": { type: "string", default: "2000" },
    "node-arg": { type: "string", multiple: true, default: [] },
    "bun-arg": { type: "string", multiple: true, default: [] },
    keep: { type: "boolean", default: false },
    help: { type: "boolean", default: false },
  },
  strict: true,
});

if (flags.help) {
  console.log(`usage: bun bench/spike.ts [flags]
  --n N             jobs, all due at the same instant T (default 10000)
  --lead-ms MS      T = start of registration + MS (default 15000 + 0.3 ms per job, so
                    registration ends well before the planner's 10 s enqueue horizon)
  --chunk K         jobs per POST /v1/jobs/batch (default and max 10000)
  --timeout-ms MS   give up waiting this long after T (default 120000)
  --settle-ms MS    after all N arrived, wait this long for late duplicates (default 2000)
  --node-arg ARG    extra flag for 'serve' (repeatable, e.g. --node-arg=--max-in-flight=1024)
  --bun-arg ARG     extra flag for the node's bun (repeatable, e.g. --bun-arg=--cpu-prof-md
                    --bun-arg=--cpu-prof-dir=/tmp/prof, or --bun-arg=--preload=/tmp/probe.ts)
  --keep            keep the temp dir (db, node stderr)`);
  process.exit(0);
}

const N = int("n", flags.n!);
const CHUNK = Math.min(BATCH_MAX, int("chunk", flags.chunk!));
const LEAD_MS = flags["lead-ms"] !== undefined ? int("lead-ms", flags["lead-ms"]) : Math.round(15_000 + 0.3 * N);
const TIMEOUT_MS = int("timeout-ms", flags["timeout-ms"]!);
const SETTLE_MS = int("settle-ms", flags["settle-ms"]!);
/** The planner enqueues firings this long before they are due (serve's --plan-ahead-ms, default 10000). */
const PLAN_HORIZON_MS = (() => {
  const args = flags["node-arg"]!;
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a.startsWith("--plan-ahead-ms=")) return Number(a.slice("--plan-ahead-ms=".length));
    if (a === "--plan-ahead-ms") return Number(args[i + 1]);
  }
  return 10_000;
})();

/** The checkout the node runs, so results from a tree that keeps changing can be told apart. */
function gitState(): { git_head: string | null; git_src_dirty: boolean | null } {
  const run = (args: string[]) => Bun.spawnSync(["git", ...args], { cwd: ROOT, stdout: "pipe", stderr: "ignore" });
  const head = run(["rev-parse", "--short", "HEAD"]);
  const dirty = run(["status", "--porcelain", "--", "src"]);
  return {
    git_head: head.exitCode === 0 ? head.stdout.toString().trim() : null,
    git_src_dirty: dirty.exitCode === 0 ? dirty.stdout.toString().trim() !== "" : null,
  };
}

function int(name: string, raw: string): number {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) {
    console.error(`--${name} must be a positive whole number, got "${raw}"`);
    process.exit(2);
  }
  return n;
}

const log = (msg: string) => console.error(`[spike ${new Date().toISOString().slice(11, 23)}] ${msg}`);

// ---- processes, and their cleanup on every way out ----

const dir = mkdtempSync(join(tmpdir(), "cronwheel-spike-"));
const dbPath = join(dir, "cw.db");
let receiver: ReceiverHandle | null = null;
/** Set as soon as the node is spawned (before it serves), so every way out stops it. */
let node: NodeProcess | null = null;

async function cleanup(): Promise<void> {
  await Promise.allSettled([node?.stop(), receiver?.stop()]);
  if (!flags.keep) rmSync(dir, { recursive: true, force: true });
}

for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.on(sig, () => {
    log(`${sig}: stopping the node and the receiver`);
    void cleanup().finally(() => process.exit(130));
  });
}

/** Firings as the node stored them, read after it stopped: enqueue window and final states. */
function storeFigures(T: number): Record<string, unknown> {
  try {
    const db = new Database(dbPath, { readonly: true });
    const states = Object.fromEntries(
      (db.query("SELECT state, COUNT(*) AS n FROM firings GROUP BY state").all() as { state: string; n: number }[]).map((r) => [r.state, r.n]),
    );
    const w = db.query("SELECT COUNT(*) AS n, MIN(created_at) AS first, MAX(created_at) AS last FROM firings").get() as {
      n: number;
      first: number | null;
      last: number | null;
    };
    const attempts = db.query("SELECT MAX(attempts) AS a FROM firings").get() as { a: number | null };
    db.close();
    return {
      firings_stored: w.n,
      firing_states: states,
      max_attempts: attempts.a,
      // Negative: enqueued before T (ahead of time, as intended).
      enqueue_first_ms: w.first === null ? null : w.first - T,
      enqueue_last_ms: w.last === null ? null : w.last - T,
    };
  } catch (err) {
    return { store_error: String(err) };
  }
}

// ---- the run ----

async function main(): Promise<number> {
  const git = gitState();
  receiver = await startReceiver({ stderrPath: join(dir, "receiver.stderr") });
  const cw = await startNodeProcess({
    dir,
    db: `file:${dbPath}`,
    name: "node", // node.stdout, node.stderr in the temp dir
    flags: ["--log-level", "warn", ...flags["node-arg"]!],
    bunArgs: flags["bun-arg"]!,
    onSpawn: (n) => {
      node = n;
    },
  });
  const url = cw.url;
  const nodePid = cw.pid;
  log(`node ${url} (pid ${nodePid}), receiver ${receiver.url} (pid ${receiver.pid}), dir ${dir}`);

  // Register: every job due at T, chosen from the start of registration (registration-independent).
  const regStart = Date.now();
  const T = Math.ceil((regStart + LEAD_MS) / 1000) * 1000;
  const at = new Date(T).toISOString();
  const hook = `${receiver.url}/hook`;
  const chunkMs: number[] = [];
  log(`registering ${N} jobs due at ${at} (T - now = ${T - regStart} ms), ${CHUNK} per batch`);
  for (let i = 0; i < N; i += CHUNK) {
    const jobs = [];
    for (let j = i; j < Math.min(N, i + CHUNK); j++) jobs.push({ id: `spike-${j}`, schedule: { at }, target: { url: hook } });
    const t0 = Date.now();
    const r = await fetch(`${url}/v1/jobs/batch`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jobs }),
    });
    const text = await r.text();
    if (r.status !== 201) throw new Error(`POST /v1/jobs/batch (jobs ${i}..) answered ${r.status}: ${text.slice(0, 500)}`);
    chunkMs.push(Date.now() - t0);
  }
  const regEnd = Date.now();
  const regMs = regEnd - regStart;
  const marginMs = T - regEnd;
  const marginOk = marginMs > PLAN_HORIZON_MS;
  log(`registered in ${regMs} ms (${fmtRate(ratePerSec(N, regMs))}); T - now = ${marginMs} ms`);
  if (!marginOk) {
    log(`WARNING: registration ended ${marginMs} ms before T, inside the planner's ${PLAN_HORIZON_MS} ms enqueue horizon; raise --lead-ms`);
  }

  // Wait for the deliveries.
  const cpuAtT = { node: null as number | null, receiver: null as number | null };
  let count = 0;
  let lastProgress = Date.now();
  let timedOut = false;
  for (;;) {
    const now = Date.now();
    if (cpuAtT.node === null && now >= T) {
      cpuAtT.node = cpuMs(nodePid);
      cpuAtT.receiver = cpuMs(receiver.pid);
    }
    count = await receiver.count();
    if (count >= N) break;
    if (cw.exitCode() !== null) {
      log(`cronwheel exited with code ${cw.exitCode()} while ${count}/${N} had arrived`);
      break;
    }
    if (now > T + TIMEOUT_MS) {
      timedOut = true;
      log(`timed out ${TIMEOUT_MS} ms after T with ${count}/${N} arrived`);
      break;
    }
    if (now - lastProgress >= 5_000) {
      lastProgress = now;
      log(now < T ? `T - ${T - now} ms, ${count} arrived` : `T + ${now - T} ms: ${count}/${N} arrived`);
    }
    await Bun.sleep(now < T - 1_000 ? 500 : 100);
  }
  const cpuDrain = {
    node: cpuAtT.node === null ? null : (cpuMs(nodePid) ?? 0) - cpuAtT.node,
    receiver: cpuAtT.receiver === null ? null : (cpuMs(receiver.pid) ?? 0) - cpuAtT.receiver,
  };
  if (count >= N && cw.exitCode() === null) await Bun.sleep(SETTLE_MS);
  const nodePeakRss = peakRssMb(nodePid);
  const nodeCrashed = cw.exitCode() !== null;
  const stats = await receiver.stats();
  const duringRun = cw.problems();
  await cw.stop();
  // The crash code, or else the code of our own SIGTERM stop.
  const nodeExit = cw.exitCode();
  const stored = storeFigures(T);
  // Lines logged by our own SIGTERM ("leadership lost", reason "shutting down") are not problems.
  const problems = [...duringRun, ...cw.problems().slice(duringRun.length).filter((l) => !l.includes('"shutting down"'))];

  const a = analyzeDeliveries(stats, N);
  const drainMs = a.last_arrival_ms === null ? null : a.last_arrival_ms - T;
  const figures = {
    n: N,
    ...git,
    registration_ms: regMs,
    registration_rate_per_s: ratePerSec(N, regMs),
    registration_chunk_max_ms: Math.max(...chunkMs),
    lead_ms: T - regStart,
    margin_after_registration_ms: marginMs,
    margin_ok: marginOk,
    lateness_ms: a.lateness_ms,
    first_arrival_ms: a.first_arrival_ms === null ? null : a.first_arrival_ms - T,
    drain_ms: drainMs,
    drain_rate_per_s: drainMs === null ? null : ratePerSec(a.distinct, Math.max(drainMs, 1)),
    received: a.received,
    distinct: a.distinct,
    duplicates: a.duplicates,
    lost: a.lost,
    retries: a.retries,
    missing_headers: a.missing_headers,
    oldest_first: a.oldest_first,
    order_inversions: a.order_inversions,
    timed_out: timedOut,
    node_crashed: nodeCrashed,
    node_exit_code: nodeExit,
    node_cpu_ms_during_drain: cpuDrain.node,
    receiver_cpu_ms_during_drain: cpuDrain.receiver,
    node_peak_rss_mb: nodePeakRss,
    ...stored,
    node_stderr_problems: problems.length,
  };
  const failed = (a.lost ?? 0) > 0 || a.duplicates > 0 || nodeCrashed;
  emit("spike", figures, [
    `${N} jobs due at the same instant; registration ${fmtMs(regMs)} (${fmtRate(figures.registration_rate_per_s)}), ` +
      `${fmtMs(marginMs)} left before T${marginOk ? "" : " (INSIDE the ${fmtMs(PLAN_HORIZON_MS)} planning horizon)"}`,
    `lateness (arrival - scheduled): ${fmtDist(a.lateness_ms)}`,
    `drain: first ${fmtMs(figures.first_arrival_ms)} after T, last ${fmtMs(drainMs)} after T, ${fmtRate(figures.drain_rate_per_s)}`,
    `received ${a.received}, distinct ${a.distinct}, duplicates ${a.duplicates}, lost ${a.lost}, retries ${a.retries}` +
      `${timedOut ? ", TIMED OUT" : ""}${nodeCrashed ? `, NODE EXITED (code ${nodeExit})` : ""}`,
    `node cpu during drain ${fmtMs(cpuDrain.node)}, peak rss ${nodePeakRss ?? "-"} MB; receiver cpu ${fmtMs(cpuDrain.receiver)}`,
    `node stderr: ${problems.length} warn/error/other line(s)${flags.keep ? `; kept in ${dir}` : ""}`,
    ...problems.slice(0, 15).map((l) => `  | ${l.length > 400 ? l.slice(0, 400) + "..." : l}`),
    failed ? "RESULT: FAIL (lost or duplicated firings, or the node exited)" : "RESULT: ok",
  ]);
  return failed ? 1 : 0;
}

let code = 1;
try {
  code = await main();
} catch (err) {
  console.error(`spike bench failed: ${(err as Error).stack ?? err}`);
  const problems = (node as NodeProcess | null)?.problems() ?? []; // set by onSpawn, which tsc does not see
  if (problems.length > 0) console.error(`node stderr (last 20 problem lines):\n${problems.slice(-20).join("\n")}`);
  code = 1;
} finally {
  await cleanup();
}
process.exit(code);
