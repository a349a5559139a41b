// The receiver's ceiling: how many webhook-shaped requests per second a plain load generator
// (keep-alive fetch, fixed concurrency, no scheduling, no store) gets through the receiver on
// this machine. Benches measure it first, in the same run, and report their delivery rate as a
// ratio of it. Run directly it loads; imported, measureCeiling() spawns it in its own process,
// as the node under test would be, and resets the receiver afterwards.
//
//   bun bench/lib/ceiling.ts --url http://127.0.0.1:PORT/hook [--n 50000] [--concurrency 512]
//
// Prints one JSON line: {"requests", "concurrency", "ms", "rate_per_s", "errors"}.

import { parseArgs } from "node:util";
import type { ReceiverHandle } from "./receiver.ts";

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
