// What every bench script shares around its measurement: whole-number flags, a timestamped log
// on stderr (stdout carries only the result), the state of the checkout the node runs, the
// node's planning horizon, and one way out that always stops what the run started.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT } from "./node.ts";
import { BATCH_MAX } from "./register.ts";

/** Flags of every bench that starts nodes, to spread into parseArgs' options. */
export const NODE_FLAGS = {
  "node-arg": { type: "string", multiple: true, default: [] as string[] },
  "bun-arg": { type: "string", multiple: true, default: [] as string[] },
  keep: { type: "boolean", default: false },
  help: { type: "boolean", default: false },
} as const;

export const NODE_FLAGS_HELP = `  --node-arg ARG    extra flag for every node's 'serve' (repeatable, e.g. --node-arg=--max-in-flight=1024)
  --bun-arg ARG     extra flag for every node's bun (repeatable, e.g. --bun-arg=--cpu-prof-md
                    --bun-arg=--cpu-prof-dir=/tmp/prof)
  --keep            keep the temp dir (db, node stderr)`;

/** Flags of the benches built on one-shot jobs (spike, steady, cluster-spike). */
export function oneShotFlags(timeoutMs: number) {
  return {
    "lead-ms": { type: "string" },
    chunk: { type: "string", default: String(BATCH_MAX) },
    "ceiling-n": { type: "string" },
    "timeout-ms": { type: "string", default: String(timeoutMs) },
    "settle-ms": { type: "string", default: "2000" },
  } as const;
}

/** A flag's value as a whole number >= min; exits 2 (usage) otherwise. */
export function wholeNumber(flag: string, raw: string, min = 1): number {
  const n = Number(raw);
  if (raw.trim() === "" || !Number.isInteger(n) || n < min) {
    console.error(`--${flag} must be a whole number >= ${min}, got "${raw}"`);
    process.exit(2);
  }
  return n;
}

/** A comma-separated list of whole numbers (e.g. --sizes 10000,1000000). */
export function wholeNumbers(flag: string, raw: string, min = 1): number[] {
  return raw.split(",").map((part) => wholeNumber(flag, part.trim(), min));
}

export type Log = (msg: string) => void;

export function benchLog(bench: string): Log {
  return (msg) => console.error(`[${bench} ${new Date().toISOString().slice(11, 23)}] ${msg}`);
}

/** The checkout the node runs, so results from a tree that keeps changing can be told apart. */
export function gitState(): { git_head: string | null; git_src_dirty: boolean | null } {
  const run = (args: string[]) => Bun.spawnSync(["git", ...args], { cwd: ROOT, stdout: "pipe", stderr: "ignore" });
  const head = run(["rev-parse", "--short", "HEAD"]);
  const dirty = run(["status", "--porcelain", "--", "src"]);
  return {
    git_head: head.exitCode === 0 ? head.stdout.toString().trim() : null,
    git_src_dirty: dirty.exitCode === 0 ? dirty.stdout.toString().trim() !== "" : null,
  };
}

/** The planner enqueues firings this long before they are due: serve's --plan-ahead-ms (default 10000) among the node's flags. */
export function planAheadMs(nodeArgs: string[]): number {
  for (let i = 0; i < nodeArgs.length; i++) {
    const a = nodeArgs[i]!;
    if (a.startsWith("--plan-ahead-ms=")) return Number(a.slice("--plan-ahead-ms=".length));
    if (a === "--plan-ahead-ms") return Number(nodeArgs[i + 1]);
  }
  return 10_000;
}

/**
 * How long before the first instant registration starts by default: past the planning horizon
 * (jobs registered inside it would be planned while registration still runs) by 5 s, plus
 * 0.3 ms per job for registration itself.
 */
export function defaultLeadMs(jobs: number, horizonMs: number): number {
  return Math.round(horizonMs + 5_000 + 0.3 * jobs);
}

/** A temp dir for one bench run (db files, node and receiver stderr), removed unless kept. */
export function scratchDir(bench: string): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `cronwheel-${bench}-`));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Runs a bench's main and exits with its code. `cleanup` runs on every way out: normal end,
 * a thrown error (printed, exit 1) and Ctrl-C or SIGTERM (exit 130), so no node or receiver
 * outlives the script.
 */
export async function runBench(bench: string, main: () => Promise<number>, cleanup: () => Promise<void>): Promise<never> {
  const log = benchLog(bench);
  for (const sig of ["SIGINT", "SIGTERM"] as const) {
    process.on(sig, () => {
      log(`${sig}: stopping the nodes and the receiver`);
      void cleanup().finally(() => process.exit(130));
    });
  }
  let code = 1;
  try {
    code = await main();
  } catch (err) {
    console.error(`${bench} bench failed: ${(err as Error).stack ?? err}`);
    code = 1;
  } finally {
    await cleanup();
  }
  process.exit(code);
}

/**
 * A one-shot bench's flags (oneShotFlags and NODE_FLAGS) read: the ceiling's requests per try,
 * and `run`, the options of runOneShots that come from flags.
 */
export function oneShotSettings(
  flags: { "node-arg"?: string[]; "bun-arg"?: string[]; "lead-ms"?: string; "ceiling-n"?: string; chunk?: string; "timeout-ms"?: string; "settle-ms"?: string },
  jobs: number,
) {
  const nodeArgs = flags["node-arg"] ?? [];
  const horizonMs = planAheadMs(nodeArgs);
  return {
    ceilingN: flags["ceiling-n"] !== undefined ? wholeNumber("ceiling-n", flags["ceiling-n"]) : Math.min(jobs, 50_000),
    run: {
      horizonMs,
      leadMs: flags["lead-ms"] !== undefined ? wholeNumber("lead-ms", flags["lead-ms"]) : defaultLeadMs(jobs, horizonMs),
      // oneShotFlags gives these defaults.
      chunk: wholeNumber("chunk", flags.chunk!),
      timeoutMs: wholeNumber("timeout-ms", flags["timeout-ms"]!),
      settleMs: wholeNumber("settle-ms", flags["settle-ms"]!, 0),
      nodeArgs,
      bunArgs: flags["bun-arg"] ?? [],
    },
  };
}
