// Steady-load bench: R firings a second for D seconds on one real node (fresh embedded db),
// delivered to a receiver in its own process. R×D one-shot jobs, job i due at
// T0 + floor(i·1000/R) ms, all registered before the planner's horizon reaches T0. Measures the
// receiver's ceiling first, then lateness p50/p90/p99/max (targets: p99 < 20 ms at 1,000/s,
// < 50 ms at 5,000/s), losses, duplicates, the delivered rate and its ratio to the ceiling, and
// the node's CPU and peak RSS.
// Run: npx bun bench/steady.ts --rate 1000 --duration-s 60   (--help for the other flags)

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
    rate: { type: "string", default: "1000" },
    "duration-s": { type: "string", default: "60" },
    ...oneShotFlags(30_000),
    ...NODE_FLAGS,
  },
  strict: true,
});

if (flags.help) {
  console.log(`usage: bun bench/steady.ts [flags]
  --rate R          firings per second (default 1000)
  --duration-s D    seconds of firings (default 60); R×D one-shot jobs in all
  --lead-ms MS      first instant T0 = start of registration + MS (default: the planning horizon
                    + 5000 + 0.3 ms per job, so registration ends before the planner reaches T0)
  --chunk K         jobs per POST /v1/jobs/batch (default and max 10000)
  --ceiling-n N     requests per try when measuring the receiver's ceiling (default min(R×D, 50000))
  --timeout-ms MS   give up waiting this long after the last instant (default 30000)
  --settle-ms MS    after all arrived, wait this long for late duplicates (default 2000)
${NODE_FLAGS_HELP}`);
  process.exit(0);
}

const RATE = wholeNumber("rate", flags.rate!);
const DURATION_S = wholeNumber("duration-s", flags["duration-s"]!);
const N = RATE * DURATION_S;
const settings = oneShotSettings(flags, N);
/** The targets: p99 lateness under 20 ms at 1,000/s and under 50 ms at 5,000/s. */
const P99_TARGET_MS = RATE <= 1_000 ? 20 : RATE <= 5_000 ? 50 : null;
const log = benchLog("steady");

const scratch = scratchDir("steady");
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
    offsetMs: (i) => Math.floor((i * 1000) / RATE),
    receiver: started.receiver,
    log,
    onSpawn: (node) => nodes.push(node),
  });
  const delivered = f.drain_rate_per_s;
  const ratio = ratioToCeiling(delivered, ceiling);
  const p99 = f.lateness_ms.p99;
  const p99Ok = P99_TARGET_MS === null || p99 === null ? null : p99 < P99_TARGET_MS;
  const cpuPerS = f.node_cpu_ms_during_drain === null || f.drain_ms === null ? null : round(f.node_cpu_ms_during_drain / (Math.max(f.drain_ms, 1) / 1000));
  const { n, ...rest } = f;
  emit(
    "steady",
    {
      rate: RATE,
      duration_s: DURATION_S,
      n,
      ...git,
      delivered_rate_per_s: delivered,
      ratio_to_ceiling: ratio,
      ceiling,
      p99_target_ms: P99_TARGET_MS,
      p99_ok: p99Ok,
      node_cpu_ms_per_s: cpuPerS,
      ...rest,
    },
    [
      `${RATE}/s for ${DURATION_S} s (${N} one-shots); lateness p99 ${fmtMs(p99)}` +
        (P99_TARGET_MS === null ? "" : ` (target < ${P99_TARGET_MS} ms: ${p99Ok ? "met" : "MISSED"})`),
      `delivered ${fmtRate(delivered)} = ${ratio ?? "-"} of the receiver's ceiling ${fmtCeiling(ceiling)}; node cpu ${cpuPerS ?? "-"} ms per second`,
      ...oneShotsSummary(f, problems),
      ...(flags.keep ? [`kept ${scratch.dir}`] : []),
      failed ? "RESULT: FAIL (lost or duplicated firings, or the node exited)" : "RESULT: ok",
    ],
  );
  return failed ? 1 : 0;
}

await runBench("steady", main, async () => {
  await Promise.allSettled([...nodes.map((n) => n.stop()), receiver?.stop()]);
  if (!flags.keep) scratch.remove();
});
