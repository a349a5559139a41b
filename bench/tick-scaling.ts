// Flat tick: does finding due work cost the same with a million jobs registered as with ten
// thousand? For each size, a fresh node gets that many background jobs that are not due during
// the run (crons months away, one-shots hours ahead) and a fixed foreground of every-second
// jobs delivering to a receiver. Over a measurement window after a warm-up it reads the node's
// own metrics (cronwheel_find_due_ms: the planner's store reads of due jobs, per pass) and its
// CPU, and prints per size the cost per planning tick (ms) and per firing (µs), CPU ms per
// second, and the ratio largest/smallest (target: within 1.5×). Foreground firings are checked
// for losses and duplicates.
// Run: npx bun bench/tick-scaling.ts [--sizes 10000,1000000] [--duration-s 20]

import { join } from "node:path";
import { parseArgs } from "node:util";
import { benchLog, gitState, NODE_FLAGS, NODE_FLAGS_HELP, runBench, scratchDir, wholeNumber, wholeNumbers } from "./lib/cli.ts";
import { farJob } from "./lib/jobs.ts";
import { metricSum, scrapeMetrics, type Sample } from "./lib/metrics.ts";
import { cpuMs, peakRssMb, startNodeProcess, type NodeProcess } from "./lib/node.ts";
import { startReceiver, type ReceiverHandle } from "./lib/receiver.ts";
import { assertRegistered, registerJobs } from "./lib/register.ts";
import { dist, emit, fmtDist, fmtMs, round } from "./lib/report.ts";

const { values: flags } = parseArgs({
  args: process.argv.slice(2),
  options: {
    sizes: { type: "string", default: "10000,1000000" },
    foreground: { type: "string", default: "200" },
    "duration-s": { type: "string", default: "20" },
    "warmup-s": { type: "string" },
    parallel: { type: "string", default: "2" },
    ...NODE_FLAGS,
  },
  strict: true,
});

if (flags.help) {
  console.log(`usage: bun bench/tick-scaling.ts [flags]
  --sizes A,B,...   background jobs per run, a fresh node each (default 10000,1000000)
  --foreground F    every-second cron jobs delivering to the receiver (default 200)
  --duration-s D    measurement window, seconds (default 20)
  --warmup-s W      after registration, run this long before the window opens (default min(5, D/4))
  --parallel K      batch requests in flight while registering (default 2)
${NODE_FLAGS_HELP}`);
  process.exit(0);
}

const SIZES = wholeNumbers("sizes", flags.sizes!);
const FOREGROUND = wholeNumber("foreground", flags.foreground!);
const DURATION_MS = wholeNumber("duration-s", flags["duration-s"]!) * 1000;
const WARMUP_MS = flags["warmup-s"] !== undefined ? wholeNumber("warmup-s", flags["warmup-s"], 0) * 1000 : Math.min(5_000, DURATION_MS / 4);
const PARALLEL = wholeNumber("parallel", flags.parallel!);
/** The target: the cost with the largest size within 1.5× of the smallest. */
const TARGET_RATIO = 1.5;
const log = benchLog("tick-scaling");

const scratch = scratchDir("tick");
let receiver: ReceiverHandle | null = null;
const nodes: NodeProcess[] = [];

/** The counters the window is measured from, read at one moment. */
async function reading(node: NodeProcess): Promise<{ at: number; cpu: number | null; samples: Sample[] }> {
  const samples = await scrapeMetrics(node.url);
  return { at: Date.now(), cpu: cpuMs(node.pid), samples };
}

async function runSize(size: number, rcv: ReceiverHandle) {
  const dir = join(scratch.dir, `size-${size}`);
  await Bun.write(join(dir, ".keep"), "");
  await rcv.reset();
  const node = await startNodeProcess({
    dir,
    db: `file:${join(dir, "cw.db")}`,
    name: "node",
    flags: ["--log-level", "warn", ...flags["node-arg"]!],
    bunArgs: flags["bun-arg"]!,
    onSpawn: (n) => nodes.push(n),
  });
  try {
    const hook = { url: `${rcv.url}/hook` };
    const now = Date.now();
    log(`${size} background jobs: registering on ${node.url} (pid ${node.pid})`);
    const bg = await registerJobs(node.url, size, (j) => farJob(j, now, hook), { parallel: PARALLEL });
    assertRegistered(bg);
    const fg = await registerJobs(node.url, FOREGROUND, (j) => ({ id: `fg-${j}`, schedule: { cron: "* * * * * *" }, target: hook }));
    assertRegistered(fg);
    log(`${size}: registered in ${fmtMs(bg.ms)} + ${FOREGROUND} every-second jobs; warm-up ${fmtMs(WARMUP_MS)}, window ${fmtMs(DURATION_MS)}`);
    await Bun.sleep(WARMUP_MS);
    const start = await reading(node);
    await Bun.sleep(DURATION_MS);
    const end = await reading(node);
    // Instants up to a second before the window closed have arrived by now unless something is wrong.
    await Bun.sleep(1_500);
    const stats = await rcv.stats();
    const peakRss = peakRssMb(node.pid);
    const crashed = node.exitCode() !== null;
    const duringRun = node.problems();
    await node.stop();
    const problems = [...duringRun, ...node.problems().slice(duringRun.length).filter((l) => !l.includes('"shutting down"'))];

    const delta = (name: string, labels?: Record<string, string>) => metricSum(end.samples, name, labels) - metricSum(start.samples, name, labels);
    const windowS = (end.at - start.at) / 1000;
    const passes = delta("cronwheel_find_due_ms_count");
    const findDueMs = delta("cronwheel_find_due_ms_sum");
    const enqueued = delta("cronwheel_enqueued_firings_total");
    const done = delta("cronwheel_firings_total", { outcome: "DONE" });
    const cpu = start.cpu === null || end.cpu === null ? null : end.cpu - start.cpu;

    // Foreground: every job at every whole second inside the window, once each.
    const first = Math.ceil(start.at / 1000) * 1000;
    const last = Math.floor((end.at - 1000) / 1000) * 1000;
    const arrivals = new Map<string, number>();
    const lateness: number[] = [];
    let background = 0;
    for (let i = 0; i < stats.count; i++) {
      const key = stats.keys[i] ?? "";
      if (!key.startsWith("fg-")) {
        background++;
        continue;
      }
      const seen = arrivals.get(key) ?? 0;
      arrivals.set(key, seen + 1);
      const at = stats.scheduled_ms[i];
      if (seen === 0 && at != null && at >= first && at <= last) lateness.push(stats.arrival_ms[i]! - at);
    }
    let expected = 0;
    let lost = 0;
    for (let j = 0; j < FOREGROUND; j++) {
      for (let t = first; t <= last; t += 1000) {
        expected++;
        if (!arrivals.has(`fg-${j}:${t}`)) lost++;
      }
    }
    const duplicates = [...arrivals.values()].reduce((n, c) => n + c - 1, 0);
    return {
      jobs: size,
      registration_ms: bg.ms,
      window_ms: end.at - start.at,
      planner_passes: passes,
      passes_per_s: round(passes / windowS, 2),
      find_due_ms_total: round(findDueMs, 3),
      find_due_ms_per_tick: passes > 0 ? round(findDueMs / passes, 4) : null,
      find_due_us_per_firing: enqueued > 0 ? round((findDueMs * 1000) / enqueued, 3) : null,
      found_due: delta("cronwheel_found_due_total"),
      firings_enqueued: enqueued,
      firings_done: done,
      node_cpu_ms_per_s: cpu === null ? null : round(cpu / windowS, 1),
      node_cpu_us_per_firing: cpu === null || done === 0 ? null : round((cpu * 1000) / done),
      node_peak_rss_mb: peakRss,
      lateness_ms: dist(lateness),
      expected,
      lost,
      duplicates,
      background_delivered: background,
      node_crashed: crashed,
      node_stderr_problems: problems.length,
      problems: problems.slice(0, 5),
    };
  } finally {
    await node.stop();
  }
}

async function main(): Promise<number> {
  const git = gitState();
  receiver = await startReceiver({ stderrPath: join(scratch.dir, "receiver.stderr") });
  log(`receiver ${receiver.url} (pid ${receiver.pid}), dir ${scratch.dir}; sizes ${SIZES.join(", ")}`);
  const runs: Awaited<ReturnType<typeof runSize>>[] = [];
  for (const size of SIZES) runs.push(await runSize(size, receiver));

  const small = runs.reduce((a, b) => (b.jobs < a.jobs ? b : a));
  const large = runs.reduce((a, b) => (b.jobs > a.jobs ? b : a));
  const ratio = (pick: (r: (typeof runs)[number]) => number | null): number | null => {
    const a = pick(large);
    const b = pick(small);
    return a === null || b === null || b === 0 ? null : round(a / b, 2);
  };
  const ratios = {
    find_due_per_tick: ratio((r) => r.find_due_ms_per_tick),
    find_due_per_firing: ratio((r) => r.find_due_us_per_firing),
    node_cpu_per_s: ratio((r) => r.node_cpu_ms_per_s),
  };
  const lost = runs.reduce((n, r) => n + r.lost, 0);
  const duplicates = runs.reduce((n, r) => n + r.duplicates, 0);
  const failed = lost > 0 || duplicates > 0 || runs.some((r) => r.node_crashed);
  const within = ratios.find_due_per_tick === null ? null : ratios.find_due_per_tick <= TARGET_RATIO;
  emit(
    "tick-scaling",
    {
      ...git,
      sizes: SIZES,
      foreground: FOREGROUND,
      duration_s: DURATION_MS / 1000,
      warmup_s: WARMUP_MS / 1000,
      ratio_large_small: ratios,
      target_ratio: TARGET_RATIO,
      ratio_ok: within,
      lost,
      duplicates,
      runs: runs.map(({ problems, ...r }) => r),
    },
    [
      ...runs.flatMap((r) => [
        `${r.jobs} jobs: find due ${r.find_due_ms_per_tick ?? "-"} ms per tick (${r.passes_per_s} ticks/s), ${r.find_due_us_per_firing ?? "-"} µs per firing; ` +
          `node cpu ${r.node_cpu_ms_per_s ?? "-"} ms/s (${r.node_cpu_us_per_firing ?? "-"} µs per firing), peak rss ${r.node_peak_rss_mb ?? "-"} MB; registered in ${fmtMs(r.registration_ms)}`,
        `  foreground lateness ${fmtDist(r.lateness_ms)}; expected ${r.expected}, lost ${r.lost}, duplicates ${r.duplicates}, background delivered ${r.background_delivered}` +
          `${r.node_crashed ? ", NODE EXITED" : ""}; node stderr ${r.node_stderr_problems} problem line(s)`,
        ...r.problems.map((l) => `  | ${l.length > 300 ? l.slice(0, 300) + "..." : l}`),
      ]),
      `${large.jobs} vs ${small.jobs}: find due per tick ×${ratios.find_due_per_tick ?? "-"}, per firing ×${ratios.find_due_per_firing ?? "-"}, ` +
        `node cpu ×${ratios.node_cpu_per_s ?? "-"} (target ≤ ×${TARGET_RATIO}: ${within === null ? "-" : within ? "met" : "MISSED"})`,
      ...(flags.keep ? [`kept ${scratch.dir}`] : []),
      failed ? "RESULT: FAIL (lost or duplicated foreground firings, or a node exited)" : "RESULT: ok",
    ],
  );
  return failed ? 1 : 0;
}

await runBench("tick-scaling", main, async () => {
  await Promise.allSettled([...nodes.map((n) => n.stop()), receiver?.stop()]);
  if (!flags.keep) scratch.remove();
});
