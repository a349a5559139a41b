// The spike on a cluster: N one-shots due at one instant, first on one node, then on K nodes
// (default 3) sharing one embedded db file (a fresh db each time). Registration goes to the
// first node; deliveries spread over the nodes by the leader's hash ring. Measures the
// receiver's ceiling first and reports both drain rates, their ratio cluster/single (target:
// the cluster drains no slower, ratio >= 1), each one's ratio to the ceiling, and losses and
// duplicates for each.
// Run: npx bun bench/cluster-spike.ts [--n 100000] [--nodes 3]

import { join } from "node:path";
import { parseArgs } from "node:util";
import { fmtCeiling, ratioToCeiling, startReceiverAndCeiling } from "./lib/ceiling.ts";
import { benchLog, gitState, NODE_FLAGS, NODE_FLAGS_HELP, oneShotFlags, oneShotSettings, runBench, scratchDir, wholeNumber } from "./lib/cli.ts";
import type { NodeProcess } from "./lib/node.ts";
import { oneShotsSummary, runOneShots } from "./lib/oneshots.ts";
import type { ReceiverHandle } from "./lib/receiver.ts";
import { emit, fmtMs, fmtRate, round } from "./lib/report.ts";

const { values: flags } = parseArgs({
  args: process.argv.slice(2),
  options: {
    n: { type: "string", default: "100000" },
    nodes: { type: "string", default: "3" },
    ...oneShotFlags(120_000),
    ...NODE_FLAGS,
  },
  strict: true,
});

if (flags.help) {
  console.log(`usage: bun bench/cluster-spike.ts [flags]
  --n N             jobs, all due at the same instant T (default 100000)
  --nodes K         nodes in the cluster run (default 3); the other run has one
  --lead-ms MS      T = start of registration + MS (default: the planning horizon + 5000 + 0.3 ms per job)
  --chunk C         jobs per POST /v1/jobs/batch (default and max 10000)
  --ceiling-n N     requests per try when measuring the receiver's ceiling (default min(N, 50000))
  --timeout-ms MS   give up waiting this long after T (default 120000)
  --settle-ms MS    after all N arrived, wait this long for late duplicates (default 2000)
${NODE_FLAGS_HELP}`);
  process.exit(0);
}

const N = wholeNumber("n", flags.n!);
const NODES = wholeNumber("nodes", flags.nodes!, 2);
const settings = oneShotSettings(flags, N);
const log = benchLog("cluster-spike");

const scratch = scratchDir("cluster-spike");
let receiver: ReceiverHandle | null = null;
const nodes: NodeProcess[] = [];

async function main(): Promise<number> {
  const git = gitState();
  const { receiver: rcv, ceiling } = await startReceiverAndCeiling(scratch.dir, settings.ceilingN, log, (r) => (receiver = r));

  const spike = async (count: number) => {
    const dir = join(scratch.dir, count === 1 ? "single" : "cluster");
    await Bun.write(join(dir, ".keep"), "");
    await rcv.reset();
    log(`--- ${count} node(s) ---`);
    const run = await runOneShots({
      ...settings.run,
      dir,
      nodes: count,
      n: N,
      offsetMs: () => 0,
      receiver: rcv,
      log,
      onSpawn: (node) => nodes.push(node),
    });
    return { ...run, figures: { ratio_to_ceiling: ratioToCeiling(run.figures.drain_rate_per_s, ceiling), ...run.figures } };
  };
  const single = await spike(1);
  const cluster = await spike(NODES);

  const one = single.figures.drain_rate_per_s;
  const many = cluster.figures.drain_rate_per_s;
  const ratio = one === null || many === null || one === 0 ? null : round(many / one, 3);
  const failed = single.failed || cluster.failed;
  emit(
    "cluster-spike",
    {
      n: N,
      nodes: NODES,
      ...git,
      drain_rate_single_per_s: one,
      drain_rate_cluster_per_s: many,
      ratio_cluster_to_single: ratio,
      ratio_ok: ratio === null ? null : ratio >= 1,
      lost: (single.figures.lost ?? 0) + (cluster.figures.lost ?? 0),
      duplicates: single.figures.duplicates + cluster.figures.duplicates,
      ceiling,
      single: single.figures,
      cluster: cluster.figures,
    },
    [
      `${N} jobs due at the same instant; receiver ceiling ${fmtCeiling(ceiling)}`,
      `one node: drain ${fmtMs(single.figures.drain_ms)} after T, ${fmtRate(one)} (${single.figures.ratio_to_ceiling ?? "-"} of the ceiling)`,
      ...oneShotsSummary(single.figures, single.problems).map((l) => `  ${l}`),
      `${NODES} nodes: drain ${fmtMs(cluster.figures.drain_ms)} after T, ${fmtRate(many)} (${cluster.figures.ratio_to_ceiling ?? "-"} of the ceiling)`,
      ...oneShotsSummary(cluster.figures, cluster.problems).map((l) => `  ${l}`),
      `${NODES} nodes / one node: ×${ratio ?? "-"} (target >= 1: ${ratio === null ? "-" : ratio >= 1 ? "met" : "MISSED"})`,
      ...(flags.keep ? [`kept ${scratch.dir}`] : []),
      failed ? "RESULT: FAIL (lost or duplicated firings, or a node exited)" : "RESULT: ok",
    ],
  );
  return failed ? 1 : 0;
}

await runBench("cluster-spike", main, async () => {
  await Promise.allSettled([...nodes.map((n) => n.stop()), receiver?.stop()]);
  if (!flags.keep) scratch.remove();
});
