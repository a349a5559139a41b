// Spike bench (SPEC promise 1): N one-shot jobs all due at the same instant T on one real node
// (separate process, fresh embedded db) delivering to a receiver in another process. Measures
// the receiver's ceiling first, then registration time, lateness p50/p90/p99/max, drain time
// and rate (and its ratio to the ceiling; the target is >= 0.8), losses and duplicates.
// Run: npx bun bench/spike.ts --n 10000   (also --n 100000; --help for the other flags)

import { parseArgs } from "node:util";
import { fmtCeiling, ratioToCeiling, startReceiverAndCeiling } from "./lib/ceiling.ts";
import { benchLog, gitState, NODE_FLAGS, NODE_FLAGS_HELP, oneShotFlags, oneShotSettings, runBench, scratchDir, wholeNumber } from "./lib/cli.ts";
import type { NodeProcess } from "./lib/node.ts";
import { oneShotsSummary, runOneShots } from "./lib/oneshots.ts";
import type { ReceiverHandle } from "./lib/receiver.ts";
import { emit, fmtMs, fmtRate } from "./lib/report.ts";

const { values: flags } = parseArgs({
  args: process.argv.slice(2),
  options: {
    n: { type: "string", default: "10000" },
    ...oneShotFlags(120_000),
    ...NODE_FLAGS,
  },
  strict: true,
});

if (flags.help) {
  console.log(`usage: bun bench/spike.ts [flags]
  --n N             jobs, all due at the same instant T (default 10000)
  --lead-ms MS      T = start of registration + MS (default: the planning horizon + 5000 + 0.3 ms
                    per job, so registration ends before the planner's enqueue horizon)
  --chunk K         jobs per POST /v1/jobs/batch (default and max 10000)
  --ceiling-n N     requests per try when measuring the receiver's ceiling (default min(N, 50000))
  --timeout-ms MS   give up waiting this long after T (default 120000)
  --settle-ms MS    after all N arrived, wait this long for late duplicates (default 2000)
${NODE_FLAGS_HELP}`);
  process.exit(0);
}

const N = wholeNumber("n", flags.n!);
const settings = oneShotSettings(flags, N);
const log = benchLog("spike");

const scratch = scratchDir("spike");
let receiver: ReceiverHandle | null = null;
const nodes: NodeProcess[] = [];

async function main(): Promise<number> {
  const git = gitState();
  const started = await startReceiverAndCeiling(scratch.dir, settings.ceilingN, log, (r) => (receiver = r));
  const ceiling = started.ceiling;

  const { figures: f, problems, failed } = await runOneShots({
    ...settings.run,
    dir: scratch.dir,
    nodes: 1,
    n: N,
    offsetMs: () => 0,
    receiver: started.receiver,
    log,
    onSpawn: (node) => nodes.push(node),
  });
  const ratio = ratioToCeiling(f.drain_rate_per_s, ceiling);
  const { n, ...rest } = f;
  emit("spike", { n, ...git, ratio_to_ceiling: ratio, ceiling, ...rest }, [
    `${N} jobs due at the same instant T`,
    `drain: first ${fmtMs(f.first_arrival_ms)} after T, last ${fmtMs(f.drain_ms)} after T, ${fmtRate(f.drain_rate_per_s)}` +
      ` = ${ratio ?? "-"} of the receiver's ceiling ${fmtCeiling(ceiling)} (target >= 0.8)`,
    ...oneShotsSummary(f, problems),
    ...(flags.keep ? [`kept ${scratch.dir}`] : []),
    failed ? "RESULT: FAIL (lost or duplicated firings, or the node exited)" : "RESULT: ok",
  ]);
  return failed ? 1 : 0;
}

await runBench("spike", main, async () => {
  await Promise.allSettled([...nodes.map((n) => n.stop()), receiver?.stop()]);
  if (!flags.keep) scratch.remove();
});
