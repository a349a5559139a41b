// The bench scripts work: each runs as its own process at a tiny size (seconds), prints its one
// JSON line and exits 0, with nothing lost or duplicated and the counts right. Timings are
// never asserted: they depend on the machine and on what else runs on it.

import { expect, test } from "bun:test";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..");

/** Short leads for tiny runs: plan 1 s ahead, register 2.5 s before the instant, small ceiling tries. */
const QUICK = ["--node-arg=--plan-ahead-ms=1000", "--lead-ms", "2500", "--settle-ms", "500", "--ceiling-n", "2000"];

/** Runs `bun bench/<script> ...args`; returns its JSON line, failing with its output if it exited non-zero. */
async function bench(script: string, args: string[]): Promise<any> {
  const proc = Bun.spawn([process.execPath, join("bench", script), ...args], { cwd: ROOT, stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const [code, out, err] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  if (code !== 0) throw new Error(`bench/${script} exited with ${code}\n--- stdout\n${out}\n--- stderr\n${err.slice(-4000)}`);
  const lines = out.split("\n").filter((l) => l.startsWith('{"bench":'));
  expect(lines).toHaveLength(1);
  return JSON.parse(lines[0]!);
}

function expectCeiling(c: any): void {
  expect(c.tries.length).toBeGreaterThanOrEqual(2);
  expect(c.errors).toBe(0);
  expect(c.rate_per_s).toBe(Math.max(...c.tries.map((t: any) => t.rate_per_s)));
}

/** Every one-shot arrived exactly once and the store agrees. */
function expectDelivered(f: any, n: number): void {
  expect(f.lost).toBe(0);
  expect(f.duplicates).toBe(0);
  expect(f.distinct).toBe(n);
  expect(f.node_crashed).toBe(false);
  expect(f.firings_stored).toBe(n);
  expect(f.firing_states).toEqual({ DONE: n });
}

test("spike", async () => {
  const r = await bench("spike.ts", ["--n", "500", ...QUICK]);
  expect(r.bench).toBe("spike");
  expectDelivered(r, 500);
  expectCeiling(r.ceiling);
  expect(typeof r.ratio_to_ceiling).toBe("number");
}, 60_000);

test("steady", async () => {
  const r = await bench("steady.ts", ["--rate", "200", "--duration-s", "3", ...QUICK]);
  expect(r.bench).toBe("steady");
  expect(r.n).toBe(600);
  expectDelivered(r, 600);
  expectCeiling(r.ceiling);
  expect(r.lateness_ms.count).toBe(600);
  // The instants span the duration: job i at T0 + floor(i * 1000 / rate) ms.
  expect(r.span_ms).toBe(2995);
}, 60_000);

test("register-1m", async () => {
  const r = await bench("register-1m.ts", ["--n", "5000", "--settle-ms", "2000"]);
  expect(r.bench).toBe("register-1m");
  expect(r.failed_requests).toBe(0);
  expect(r.jobs_stored).toBe(5000);
  expect(r.count_ok).toBe(true);
  expect(r.node_crashed).toBe(false);
  expect(typeof r.node_rss_after_mb).toBe("number");
  expect(typeof r.node_peak_rss_mb).toBe("number");
}, 60_000);

test("tick-scaling", async () => {
  const r = await bench("tick-scaling.ts", ["--sizes", "1000,5000", "--duration-s", "4", "--warmup-s", "1", "--foreground", "50"]);
  expect(r.bench).toBe("tick-scaling");
  expect(r.runs.map((x: any) => x.jobs)).toEqual([1000, 5000]);
  for (const run of r.runs) {
    expect(run.expected).toBeGreaterThan(0);
    expect(run.lost).toBe(0);
    expect(run.duplicates).toBe(0);
    expect(run.background_delivered).toBe(0);
    expect(run.node_crashed).toBe(false);
    // The node exposes the planner's cost of finding due work.
    expect(run.planner_passes).toBeGreaterThan(0);
    expect(run.found_due).toBeGreaterThan(0);
    expect(run.firings_enqueued).toBeGreaterThan(0);
  }
  expect(typeof r.ratio_large_small.find_due_per_tick).toBe("number");
}, 60_000);

test("cluster-spike", async () => {
  const r = await bench("cluster-spike.ts", ["--n", "500", ...QUICK]);
  expect(r.bench).toBe("cluster-spike");
  expect(r.lost).toBe(0);
  expect(r.duplicates).toBe(0);
  expectDelivered(r.single, 500);
  expectDelivered(r.cluster, 500);
  expectCeiling(r.ceiling);
  // All three nodes took part (the hash ring spreads 500 job ids over them).
  expect(r.cluster.per_node).toHaveLength(3);
  for (const node of r.cluster.per_node) expect(node.delivered).toBeGreaterThan(0);
  expect(typeof r.ratio_cluster_to_single).toBe("number");
}, 90_000);
