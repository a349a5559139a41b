// The receiver's ceiling: how many webhook-shaped requests per second a plain load generator
// (keep-alive fetch, fixed concurrency, no scheduling, no store) gets through the receiver on
// this machine. Benches measure it first, in the same run (bestCeiling: the best of a few
// concurrencies), and report their delivery rate as a ratio of it. Run directly it loads;
// imported, measureCeiling() spawns it in its own process, as the node under test would be,
// and resets the receiver afterwards.
//
//   bun bench/lib/ceiling.ts --url http://127.0.0.1:PORT/hook [--n 50000] [--concurrency 512]
//
// Prints one JSON line: {"requests", "concurrency", "ms", "rate_per_s", "errors"}.

import { parseArgs } from "node:util";
import { startReceiver, type ReceiverHandle } from "./receiver.ts";

export interface Ceiling {
  requests: number;
  concurrency: number;
  ms: number;
  rate_per_s: number;
  errors: number;
}

/** Loads the receiver from a separate process, then forgets those requests at the receiver. */
export async function measureCeiling(receiver: ReceiverHandle, n: number, concurrency = 512): Promise<Ceiling> {
  const proc = Bun.spawn(
    [process.execPath, import.meta.path, "--url", `${receiver.url}/hook`, "--n", String(n), "--concurrency", String(concurrency)],
    { stdout: "pipe", stderr: "inherit", stdin: "ignore" },
  );
  const out = await new Response(proc.stdout).text();
  const code = await proc.exited;
  if (code !== 0) throw new Error(`load generator exited with code ${code}`);
  await receiver.reset();
  return JSON.parse(out.trim().split("\n").pop()!) as Ceiling;
}

export interface CeilingReport extends Ceiling {
  /** Every try, in the order run; the figures above are the best error-free one. */
  tries: Ceiling[];
}

/** Concurrencies bestCeiling tries: a few keep-alive connections do best here, hundreds less well. */
export const CEILING_CONCURRENCIES = [16, 64, 256];

/**
 * The receiver's ceiling, honestly: the best rate a plain generator reaches at any of a few
 * concurrencies (n requests each), so a bench's ratio is never flattered by a poorly tuned
 * generator. Tries that had errors count only if every try had some.
 */
export async function bestCeiling(receiver: ReceiverHandle, n: number, concurrencies = CEILING_CONCURRENCIES): Promise<CeilingReport> {
  const tries: Ceiling[] = [];
  for (const c of concurrencies) tries.push(await measureCeiling(receiver, n, c));
  const clean = tries.filter((t) => t.errors === 0);
  const best = (clean.length > 0 ? clean : tries).reduce((a, b) => (b.rate_per_s > a.rate_per_s ? b : a));
  return { ...best, tries };
}

/** A delivery rate as a fraction of the ceiling (3 decimals); null without a rate. */
export function ratioToCeiling(ratePerS: number | null, ceiling: Ceiling): number | null {
  return ratePerS === null || ceiling.rate_per_s <= 0 ? null : Math.round((ratePerS / ceiling.rate_per_s) * 1000) / 1000;
}

/** "41,000/s (concurrency 64; tried 16: 39,000/s, 64: 41,000/s, 256: 30,000/s)" */
export function fmtCeiling(c: CeilingReport): string {
  const r = (x: number) => `${Math.round(x).toLocaleString("en-US")}/s`;
  const errors = c.tries.reduce((n, t) => n + t.errors, 0);
  return `${r(c.rate_per_s)} (concurrency ${c.concurrency}, ${c.requests} requests; tried ${c.tries.map((t) => `${t.concurrency}: ${r(t.rate_per_s)}`).join(", ")})${errors ? `, ${errors} errors` : ""}`;
}

/**
 * Starts the bench's receiver (stderr in `dir`) and measures its ceiling before any node runs,
 * so nothing else competes for the CPU. `started` gets the receiver at once, for cleanup.
 */
export async function startReceiverAndCeiling(
  dir: string,
  ceilingN: number,
  log: (msg: string) => void,
  started: (r: ReceiverHandle) => void,
): Promise<{ receiver: ReceiverHandle; ceiling: CeilingReport }> {
  const receiver = await startReceiver({ stderrPath: `${dir}/receiver.stderr` });
  started(receiver);
  log(`receiver ${receiver.url} (pid ${receiver.pid}), dir ${dir}; measuring its ceiling (${ceilingN} requests per try)`);
  const ceiling = await bestCeiling(receiver, ceilingN);
  log(`ceiling ${fmtCeiling(ceiling)}`);
  return { receiver, ceiling };
}

async function load(url: string, n: number, concurrency: number): Promise<Ceiling> {
  // The shape of a cronwheel webhook: a small JSON body and the same headers.
  const body = JSON.stringify({ hello: "world" });
  let next = 0;
  let errors = 0;
  const worker = async (): Promise<void> => {
    while (next < n) {
      const i = next++;
      const at = new Date(Date.now()).toISOString();
      try {
        const res = await fetch(url, {
          method: "POST",
          headers: {
            "Content-Type": "application/json",
            "Idempotency-Key": `ceiling-${i}`,
            "Cronwheel-Job-Id": `ceiling-${i}`,
            "Cronwheel-Firing-Id": `fir_ceiling_${i}`,
            "Cronwheel-Attempt": "1",
            "Cronwheel-Scheduled-At": at,
          },
          body,
          redirect: "manual",
        });
        await res.arrayBuffer();
        if (!res.ok) errors++;
      } catch {
        errors++;
      }
    }
  };
  // Warm the connections up, as a running node would have them.
  await Promise.all(Array.from({ length: Math.min(concurrency, 64) }, () => fetch(url.replace(/\/hook$/, "/__count")).then((r) => r.arrayBuffer())));
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const ms = performance.now() - t0;
  return { requests: n, concurrency, ms: Math.round(ms), rate_per_s: Math.round((n / ms) * 1000), errors };
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: process.argv.slice(2),
    options: { url: { type: "string" }, n: { type: "string", default: "50000" }, concurrency: { type: "string", default: "512" } },
    strict: true,
  });
  if (!values.url) {
    console.error("usage: bun bench/lib/ceiling.ts --url URL [--n N] [--concurrency C]");
    process.exit(2);
  }
  console.log(JSON.stringify(await load(values.url, Number(values.n), Number(values.concurrency))));
}
