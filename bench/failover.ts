// Failover bench (SPEC promises 2 and 3): N nodes on one database file deliver every-second
// jobs to a receiver in its own process; the leader is killed with SIGKILL mid-run. Prints how
// long the cluster had no leader, the delivery gap around the kill, and lost and duplicate firings.
// Run: npx bun bench/failover.ts   (--nodes 3 --jobs 200 --seconds 30 --kill-at 10 --lease-ms 2000)

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { startNodeProcess, type NodeProcess } from "./lib/node.ts";
import { startReceiver, type ReceiverHandle } from "./lib/receiver.ts";
import { dist, emit, fmtDist, fmtMs } from "./lib/report.ts";

const { values: flags } = parseArgs({
  args: process.argv.slice(2),
  options: {
    nodes: { type: "string", default: "3" },
    jobs: { type: "string", default: "200" },
    seconds: { type: "string", default: "30" },
    "kill-at": { type: "string", default: "10" },
    "lease-ms": { type: "string", default: "2000" },
    keep: { type: "boolean", default: false },
  },
  strict: true,
});
const nodeCount = Number(flags.nodes);
const jobCount = Number(flags.jobs);
const runMs = Number(flags.seconds) * 1000;
const killAtMs = Number(flags["kill-at"]) * 1000;
const leaseMs = Number(flags["lease-ms"]);
const log = (msg: string) => console.error(`[failover ${new Date().toISOString().slice(11, 23)}] ${msg}`);

const dir = mkdtempSync(join(tmpdir(), "cronwheel-failover-"));
const nodes: NodeProcess[] = [];
let receiver: ReceiverHandle | null = null;

async function cleanup(): Promise<void> {
  await Promise.allSettled([...nodes.map((n) => n.stop()), receiver?.stop()]);
  if (!flags.keep) rmSync(dir, { recursive: true, force: true });
}
process.on("SIGINT", () => void cleanup().finally(() => process.exit(130)));

async function cluster(node: NodeProcess): Promise<{ leader: string | null; epoch: number; nodes: { id: string; alive: boolean }[] } | null> {
  try {
    return (await (await fetch(`${node.url}/v1/cluster`)).json()) as never;
  } catch {
    return null;
  }
}

async function main(): Promise<number> {
  const rcv = await startReceiver();
  receiver = rcv;
  const db = `file:${join(dir, "cw.db")}`;
  for (let i = 1; i <= nodeCount; i++) {
    nodes.push(await startNodeProcess({ dir, db, name: `node${i}`, flags: ["--node-id", `node${i}`, "--lease-ms", String(leaseMs), "--log-level", "warn"] }));
  }
  for (let i = 0; i < 100; i++) {
    const views = await Promise.all(nodes.map(cluster));
    if (views.every((v) => v?.leader && v.nodes.filter((n) => n.alive).length === nodeCount)) break;
    await Bun.sleep(100);
  }
  const jobs = Array.from({ length: jobCount }, (_, i) => ({
    id: `fo-${i}`,
    schedule: { cron: "* * * * * *" },
    target: { url: `${rcv.url}/hook` },
  }));
  const res = await fetch(`${nodes[0]!.url}/v1/jobs/batch`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ jobs }) });
  if (res.status !== 201) throw new Error(`registration failed: ${res.status} ${await res.text()}`);
  const startedAt = Date.now();
  log(`${nodeCount} nodes, ${jobCount} every-second jobs; killing the leader at +${killAtMs / 1000} s`);

  await Bun.sleep(killAtMs);
  const before = (await cluster(nodes[0]!))!;
  const leader = nodes.find((n) => n.name === before.leader)!;
  await leader.kill9();
  const killedAt = Date.now();
  const survivors = nodes.filter((n) => n !== leader);
  let failoverMs: number | null = null;
  let newEpoch: number | null = null;
  let newLeader: string | null = null;
  while (Date.now() - killedAt < 30_000) {
    const v = await cluster(survivors[0]!);
    if (v?.leader && v.leader !== before.leader) {
      failoverMs = Date.now() - killedAt;
      newEpoch = v.epoch;
      newLeader = v.leader;
      break;
    }
    await Bun.sleep(20);
  }
  log(`killed ${before.leader} (epoch ${before.epoch}); new leader ${newLeader} (epoch ${newEpoch}) after ${failoverMs} ms`);

  await Bun.sleep(Math.max(0, startedAt + runMs - Date.now()));
  // Expected: every job at every second from shortly after registration to a few seconds ago.
  const firstInstant = Math.ceil((startedAt + 2000) / 1000) * 1000;
  const lastInstant = Math.floor((Date.now() - 3000) / 1000) * 1000;
  const expected = new Set<string>();
  for (const j of jobs) for (let t = firstInstant; t <= lastInstant; t += 1000) expected.add(`${j.id}:${t}`);
  // Give stragglers (re-claimed after a claim lease ran out) time to land.
  const deadline = Date.now() + 15_000;
  let stats = await rcv.stats();
  for (;;) {
    const got = new Set(stats.keys);
    const lost = [...expected].filter((k) => !got.has(k)).length;
    if (lost === 0 || Date.now() > deadline) break;
    await Bun.sleep(500);
    stats = await rcv.stats();
  }

  const firstArrival = new Map<string, number>();
  const arrivals = new Map<string, number>();
  for (let i = 0; i < stats.count; i++) {
    const key = stats.keys[i];
    if (!key || !expected.has(key)) continue;
    arrivals.set(key, (arrivals.get(key) ?? 0) + 1);
    if (!firstArrival.has(key)) firstArrival.set(key, stats.arrival_ms[i]!);
  }
  const instantOf = (key: string) => Number(key.slice(key.lastIndexOf(":") + 1));
  const lost = [...expected].filter((k) => !firstArrival.has(k));
  const duplicated = [...arrivals].filter(([, n]) => n > 1);
  // A duplicate is explained when the killed node may have had that request in flight.
  const inFlightAtKill = duplicated.filter(([k]) => Math.abs(firstArrival.get(k)! - killedAt) < 1500).length;
  const lateness = (from: number, to: number) =>
    [...firstArrival].filter(([k]) => instantOf(k) >= from && instantOf(k) < to).map(([k, at]) => at - instantOf(k));
  const aroundKill = dist(lateness(killedAt - 1000, killedAt + 10_000));
  const steady = dist([...lateness(firstInstant, killedAt - 1000), ...lateness(killedAt + 10_000, lastInstant + 1)]);
  // Longest stretch after the kill in which the receiver got nothing at all.
  const times = stats.arrival_ms.filter((t) => t >= killedAt).sort((a, b) => a - b);
  let silenceMs = times.length ? times[0]! - killedAt : null;
  for (let i = 1; i < times.length; i++) silenceMs = Math.max(silenceMs ?? 0, times[i]! - times[i - 1]!);

  emit(
    "failover",
    {
      nodes: nodeCount,
      jobs: jobCount,
      lease_ms: leaseMs,
      killed: before.leader,
      old_epoch: before.epoch,
      new_leader: newLeader,
      new_epoch: newEpoch,
      failover_ms: failoverMs,
      expected: expected.size,
      delivered: firstArrival.size,
      lost: lost.length,
      duplicates: duplicated.length,
      duplicates_in_flight_at_kill: inFlightAtKill,
      delivery_gap_ms: aroundKill.max,
      lateness_around_kill_ms: aroundKill,
      lateness_elsewhere_ms: steady,
      receiver_silence_after_kill_ms: silenceMs,
    },
    [
      `${nodeCount} nodes, ${jobCount} every-second jobs, lease ${leaseMs} ms; killed leader ${before.leader} (epoch ${before.epoch})`,
      `new leader ${newLeader} (epoch ${newEpoch}) after ${fmtMs(failoverMs)}`,
      `expected ${expected.size}, delivered ${firstArrival.size}, lost ${lost.length}, duplicates ${duplicated.length} (${inFlightAtKill} in flight at the kill)`,
      `delivery gap (latest firing due within 10 s of the kill): ${fmtMs(aroundKill.max)}; lateness there ${fmtDist(aroundKill)}`,
      `lateness away from the kill: ${fmtDist(steady)}`,
      `longest receiver silence after the kill: ${fmtMs(silenceMs)}`,
      lost.length === 0 && duplicated.length === inFlightAtKill ? "RESULT: ok" : `RESULT: FAIL ${lost.slice(0, 5).join(" ")}`,
    ],
  );
  return lost.length === 0 && duplicated.length === inFlightAtKill ? 0 : 1;
}

let code = 1;
try {
  code = await main();
} catch (err) {
  console.error(err);
} finally {
  for (const n of nodes) for (const line of n.problems().slice(-5)) log(`${n.name}: ${line}`);
  await cleanup();
}
process.exit(code);
