// One-shot jobs delivered by real nodes, the run the spike, steady and cluster-spike benches
// share: a fresh embedded db in `dir`, `nodes` node processes on it (the cluster formed before
// anything is registered), N one-shots registered through the batch API on the first node, job
// i due at T + offsetMs(i), T a whole second at least `leadMs` after registration starts. Waits
// until the receiver has every firing (or the time-out), lets late duplicates land, stops the
// nodes and reads what they stored.

import { Database } from "bun:sqlite";
import { join } from "node:path";
import type { Log } from "./cli.ts";
import { cpuMs, peakRssMb, startNodeProcess, waitForCluster, type NodeProcess } from "./node.ts";
import type { ReceiverHandle } from "./receiver.ts";
import { assertRegistered, registerJobs } from "./register.ts";
import { analyzeDeliveries, fmtDist, fmtMs, fmtRate, ratePerSec, round } from "./report.ts";

export interface OneShotsOptions {
  /** This run's own directory: the db, each node's stdout and stderr. */
  dir: string;
  nodes: number;
  n: number;
  /** When job i is due, ms after T; never decreasing, so the last job is due last. */
  offsetMs: (i: number) => number;
  receiver: ReceiverHandle;
  /** T = start of registration + leadMs, rounded up to a whole second. */
  leadMs: number;
  /** The node's --plan-ahead-ms: registration should end before T minus this. */
  horizonMs: number;
  /** Jobs per batch request. */
  chunk: number;
  /** Give up waiting this long after the last instant. */
  timeoutMs: number;
  /** After every firing arrived, wait this long for late duplicates. */
  settleMs: number;
  nodeArgs: string[];
  bunArgs: string[];
  log: Log;
  /** Each node as soon as it is spawned (before it serves), so an interrupted bench can stop it. */
  onSpawn: (node: NodeProcess) => void;
}

export type OneShotsFigures = Awaited<ReturnType<typeof runOneShots>>["figures"];

export async function runOneShots(o: OneShotsOptions) {
  const { n, receiver, log } = o;
  const dbPath = join(o.dir, "cw.db");
  const nodes: NodeProcess[] = [];
  try {
    return await run();
  } catch (err) {
    // What the nodes logged is usually the explanation.
    const problems = nodes.flatMap((node) => node.problems().slice(-10).map((l) => `${node.name}: ${l}`));
    if (problems.length === 0) throw err;
    throw new Error(`${(err as Error).message}\nnode stderr (last problem lines):\n${problems.join("\n")}`, { cause: err });
  } finally {
    await Promise.allSettled(nodes.map((node) => node.stop()));
  }

  async function run() {
    for (let k = 1; k <= o.nodes; k++) {
      const name = o.nodes === 1 ? "node" : `node${k}`;
      const node = await startNodeProcess({
        dir: o.dir,
        db: `file:${dbPath}`,
        name, // <name>.stdout, <name>.stderr in the run's dir
        flags: ["--log-level", "warn", ...(o.nodes > 1 ? ["--node-id", name] : []), ...o.nodeArgs],
        bunArgs: o.bunArgs,
        onSpawn: (spawned) => {
          nodes.push(spawned);
          o.onSpawn(spawned);
        },
      });
      log(`${name} ${node.url} (pid ${node.pid})`);
    }
    if (o.nodes > 1) {
      const view = await waitForCluster(nodes);
      log(`cluster of ${o.nodes}: leader ${view.leader} (epoch ${view.epoch})`);
    }

    // Register: T is chosen from the start of registration, so it does not depend on how long that takes.
    const regStart = Date.now();
    const T = Math.ceil((regStart + o.leadMs) / 1000) * 1000;
    const lastOffset = o.offsetMs(n - 1);
    const hook = `${receiver.url}/hook`;
    log(`registering ${n} jobs due from ${new Date(T).toISOString()} over ${lastOffset} ms (T - now = ${T - regStart} ms)`);
    const reg = await registerJobs(
      nodes[0]!.url,
      n,
      (i) => ({ id: `oneshot-${i}`, schedule: { at: new Date(T + o.offsetMs(i)).toISOString() }, target: { url: hook } }),
      { chunk: o.chunk },
    );
    assertRegistered(reg);
    const regEnd = Date.now();
    const marginMs = T - regEnd;
    const marginOk = marginMs > o.horizonMs;
    log(`registered in ${reg.ms} ms; T - now = ${marginMs} ms`);
    if (!marginOk) log(`WARNING: registration ended ${marginMs} ms before T, inside the ${o.horizonMs} ms planning horizon; raise --lead-ms`);

    // Wait for the deliveries.
    const cpuAtT = new Map<NodeProcess, number | null>();
    let receiverCpuAtT: number | null = null;
    let timedOut = false;
    let lastProgress = Date.now();
    const crashed = () => nodes.filter((node) => node.exitCode() !== null);
    for (;;) {
      const now = Date.now();
      if (now >= T && receiverCpuAtT === null) {
        for (const node of nodes) cpuAtT.set(node, cpuMs(node.pid));
        receiverCpuAtT = cpuMs(receiver.pid) ?? 0;
      }
      const count = await receiver.count();
      if (count >= n) break;
      if (crashed().length > 0) {
        log(`${crashed().map((c) => `${c.name} exited with code ${c.exitCode()}`).join(", ")} while ${count}/${n} had arrived`);
        break;
      }
      if (now > T + lastOffset + o.timeoutMs) {
        timedOut = true;
        log(`timed out ${o.timeoutMs} ms after the last instant with ${count}/${n} arrived`);
        break;
      }
      if (now - lastProgress >= 5_000) {
        lastProgress = now;
        log(now < T ? `T - ${T - now} ms, ${count} arrived` : `T + ${now - T} ms: ${count}/${n} arrived`);
      }
      // Wake at T itself, so the CPU counted from T misses nothing of a drain shorter than a poll.
      await Bun.sleep(now < T ? Math.min(T - now, now < T - 1_000 ? 500 : 100) : 100);
    }
    const cpuSinceT = (node: NodeProcess): number | null => {
      const at = cpuAtT.get(node);
      return at === undefined || at === null ? null : round((cpuMs(node.pid) ?? at) - at);
    };
    const perNodeCpu = nodes.map(cpuSinceT);
    const receiverCpu = receiverCpuAtT === null ? null : round((cpuMs(receiver.pid) ?? receiverCpuAtT) - receiverCpuAtT);
    if (!timedOut && crashed().length === 0) await Bun.sleep(o.settleMs);
    const perNodeRss = nodes.map((node) => peakRssMb(node.pid));
    const crashedNodes = crashed();
    const stats = await receiver.stats();
    const duringRun = nodes.map((node) => node.problems().length);
    await Promise.allSettled(nodes.map((node) => node.stop()));
    const stored = storeFigures(dbPath, T);
    // Lines logged by our own SIGTERM ("leadership lost", reason "shutting down") are not problems.
    const problems = nodes.flatMap((node, k) =>
      node
        .problems()
        .filter((line, i) => i < duringRun[k]! || !line.includes('"shutting down"'))
        .map((line) => (o.nodes > 1 ? `${node.name}: ${line}` : line)),
    );

    const a = analyzeDeliveries(stats, n);
    const drainMs = a.last_arrival_ms === null ? null : a.last_arrival_ms - T;
    const sum = (xs: (number | null)[]) => (xs.some((x) => x === null) ? null : xs.reduce<number>((s, x) => s + x!, 0));
    const figures = {
      n,
      nodes: o.nodes,
      registration_ms: reg.ms,
      registration_rate_per_s: ratePerSec(n, reg.ms),
      registration_chunk_max_ms: Math.round(Math.max(...reg.request_ms)),
      lead_ms: T - regStart,
      margin_after_registration_ms: marginMs,
      margin_ok: marginOk,
      /** From the first instant to the last. */
      span_ms: lastOffset,
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
      max_order_inversion_ms: a.max_order_inversion_ms,
      timed_out: timedOut,
      node_crashed: crashedNodes.length > 0,
      // The crash code, or else the code of our own SIGTERM stop.
      node_exit_code: crashedNodes[0]?.exitCode() ?? nodes[0]!.exitCode(),
      node_cpu_ms_during_drain: sum(perNodeCpu),
      receiver_cpu_ms_during_drain: receiverCpu,
      node_peak_rss_mb: Math.max(...perNodeRss.map((x) => x ?? 0)) || null,
      ...(o.nodes > 1
        ? {
            per_node: nodes.map((node, k) => ({
              name: node.name,
              delivered: stored.delivered_by?.[node.name] ?? 0,
              cpu_ms_during_drain: perNodeCpu[k] ?? null,
              peak_rss_mb: perNodeRss[k] ?? null,
              exit_code: node.exitCode(),
            })),
          }
        : {}),
      ...stored,
      node_stderr_problems: problems.length,
    };
    const failed = (a.lost ?? 0) > 0 || a.duplicates > 0 || crashedNodes.length > 0;
    return { T, figures, problems, failed };
  }
}

interface StoreFigures {
  firings_stored?: number;
  firing_states?: Record<string, number>;
  /** Firings by the node that made their latest attempt ("none": never attempted). */
  delivered_by?: Record<string, number>;
  max_attempts?: number | null;
  enqueue_first_ms?: number | null;
  enqueue_last_ms?: number | null;
  store_error?: string;
}

/** Firings as the nodes stored them, read after they stopped: enqueue window, final states, who delivered. */
function storeFigures(dbPath: string, T: number): StoreFigures {
  try {
    const db = new Database(dbPath, { readonly: true });
    const counts = (sql: string) => Object.fromEntries((db.query(sql).all() as { k: string | null; n: number }[]).map((r) => [r.k ?? "none", r.n]));
    const states = counts("SELECT state AS k, COUNT(*) AS n FROM firings GROUP BY state");
    const deliveredBy = counts("SELECT delivered_by AS k, COUNT(*) AS n FROM firings GROUP BY delivered_by");
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
      delivered_by: deliveredBy,
      max_attempts: attempts.a,
      // Negative: enqueued before T (ahead of time, as intended).
      enqueue_first_ms: w.first === null ? null : w.first - T,
      enqueue_last_ms: w.last === null ? null : w.last - T,
    };
  } catch (err) {
    return { store_error: String(err) };
  }
}

/** The summary lines every one-shots bench prints under its own headline. */
export function oneShotsSummary(f: OneShotsFigures, problems: string[]): string[] {
  const crash = f.node_crashed ? `, NODE EXITED (code ${f.node_exit_code})` : "";
  return [
    `registration ${fmtMs(f.registration_ms)} (${fmtRate(f.registration_rate_per_s)}), ${fmtMs(f.margin_after_registration_ms)} left before the first instant` +
      (f.margin_ok ? "" : " (INSIDE the planning horizon)"),
    `lateness (arrival - scheduled): ${fmtDist(f.lateness_ms)}`,
    `received ${f.received}, distinct ${f.distinct}, duplicates ${f.duplicates}, lost ${f.lost}, retries ${f.retries}` +
      `${f.oldest_first ? "" : `, ${f.order_inversions} order inversions`}${f.timed_out ? ", TIMED OUT" : ""}${crash}`,
    `node cpu from the first instant ${fmtMs(f.node_cpu_ms_during_drain)}, peak rss ${f.node_peak_rss_mb ?? "-"} MB; receiver cpu ${fmtMs(f.receiver_cpu_ms_during_drain)}`,
    ...(f.per_node ?? []).map((p) => `  ${p.name}: delivered ${p.delivered}, cpu ${fmtMs(p.cpu_ms_during_drain)}, peak rss ${p.peak_rss_mb ?? "-"} MB`),
    `node stderr: ${problems.length} warn/error/other line(s)`,
    ...problems.slice(0, 15).map((l) => `  | ${l.length > 400 ? l.slice(0, 400) + "..." : l}`),
  ];
}
