// Store operations of a spike, timed one by one in-process on an embedded database: what each
// firing costs in enqueue (the leader's plan write), claim, admission (concurrency slot),
// RUNNING and outcome writes. A profile of the store alone, without HTTP, to see which step
// limits the drain rate.
// Run: npx bun bench/store-ops.ts [--n 20000] [--batch 512]

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { decideOverlap } from "../src/core/overlap.ts";
import type { Firing, Job } from "../src/core/model.ts";
import { openStore } from "../src/store/index.ts";
import { testJob } from "../test/helpers/fixtures.ts";
import { emit, round } from "./lib/report.ts";

const { values: flags } = parseArgs({
  args: process.argv.slice(2),
  options: { n: { type: "string", default: "20000" }, batch: { type: "string", default: "512" } },
  strict: true,
});
const N = Number(flags.n);
const BATCH = Number(flags.batch);

const dir = mkdtempSync(join(tmpdir(), "cronwheel-store-ops-"));
const store = await openStore(`file:${join(dir, "cw.db")}`);
const nodeId = "bench";
const T = Date.now() + 60_000;

// One-shots with SPEC's defaults (concurrency max 1, overlap skip), all due at T.
const jobs: Job[] = Array.from({ length: N }, (_, i) => testJob({ id: `job-${i}`, schedule: { at: new Date(T).toISOString() } }, { nextFireAt: T }));

const timings: Record<string, number> = {};
async function timed<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  const out = await fn();
  timings[name] = (timings[name] ?? 0) + performance.now() - t0;
  return out;
}

for (let i = 0; i < N; i += 10_000) await timed("insert_jobs", () => store.jobs.insertMany(jobs.slice(i, i + 10_000)));
await store.nodes.heartbeat(nodeId, "http://127.0.0.1:1");
const lease = await store.lease.tryAcquire(nodeId, 60_000);
if (!lease) throw new Error("no lease");
const fence = { nodeId, epoch: lease.epoch };
const now = Date.now();
for (let i = 0; i < N; i += 2_000) {
  const due = await timed("plan_read_due", () => store.jobs.due(T, 2_000));
  await timed("plan_write", () =>
    store.firings.applyPlan(fence, due.map((j) => ({
      jobId: j.spec.id, version: j.version, nextFireAt: null, lastFiredAt: T,
      firings: [{ id: `fir-${j.spec.id}`, jobId: j.spec.id, scheduledAt: T, catchup: false, manual: false, priority: "normal", owner: nodeId }],
      skipStoredIds: [], catchupStoredIds: [],
    })), now),
  );
}
const claimed: Firing[] = [];
for (;;) {
  const c = await timed("claim", () => store.firings.claimReady(nodeId, [nodeId], T + 10_000, 0, 2_000, now));
  claimed.push(...c);
  if (c.length < 2_000) break;
}
await timed("load_jobs", () => store.jobs.getMany([...new Set(claimed.map((f) => f.jobId))].slice(0, N)));
for (let i = 0; i < claimed.length; i += BATCH) {
  const batch = claimed.slice(i, i + BATCH);
  const admitted = await timed("admit", () =>
    store.slots.admit(nodeId, batch.map((f) => ({
      firingId: f.id, jobId: f.jobId, scheduledAt: f.scheduledAt, waiting: false, max: 1, overlap: "skip", maxQueue: 10, catchup: false,
    })), 5_000, now, decideOverlap),
  );
  const ids = [...admitted].filter(([, r]) => r.kind === "run").map(([id]) => id);
  const running = await timed("mark_running", () => store.firings.markRunning(nodeId, ids, now));
  await timed("finish", () => store.firings.finish(nodeId, [...running].map((id) => ({ id, state: "DONE" as const })), now));
}
store.close();
rmSync(dir, { recursive: true, force: true });
const perFiring = Object.fromEntries(Object.entries(timings).map(([k, ms]) => [k, round((ms * 1000) / N, 1)]));
const drainPath = ["admit", "mark_running", "finish"].reduce((s, k) => s + (perFiring[k] ?? 0), 0);
emit("store-ops", { n: N, batch: BATCH, us_per_firing: perFiring, drain_path_us_per_firing: round(drainPath, 1) }, [
  `µs per firing: ${Object.entries(perFiring).map(([k, v]) => `${k} ${v}`).join(", ")}`,
  `at the instant (admit + RUNNING + outcome): ${round(drainPath, 1)} µs per firing, i.e. at most ${Math.round(1e6 / drainPath).toLocaleString("en-US")} firings/s from the store alone`,
]);
