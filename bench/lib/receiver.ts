// A webhook receiver for benches, run in its own process so its work never competes with the
// node under test: records per request the arrival time, Cronwheel-Scheduled-At, Idempotency-Key
// and Cronwheel-Attempt. Run directly it serves; imported, startReceiver() spawns it and talks to it.
//
//   bun bench/lib/receiver.ts [--host 127.0.0.1] [--port 0] [--status 200] [--delay-ms 0]
//
// Prints one line `{"port":N}` on stdout once listening. Control endpoints (not recorded):
//   GET /__count  -> {"count": n}
//   GET /__stats  -> {"count", "arrival_ms": [...], "scheduled_ms": [...], "keys": [...], "attempts": [...]}
//                    (parallel arrays in arrival order; scheduled_ms is null where the header was absent)
//   POST /__reset -> forgets every record
// Every other request is recorded and answered with --status (after --delay-ms, if any).

import { parseArgs } from "node:util";

export interface ReceiverStats {
  count: number;
  arrival_ms: number[];
  scheduled_ms: (number | null)[];
  keys: (string | null)[];
  attempts: (number | null)[];
}

export interface ReceiverOptions {
  host?: string;
  status?: number;
  delayMs?: number;
  /** Where the receiver's stderr goes (default: inherited). */
  stderrPath?: string;
}

export interface ReceiverHandle {
  url: string;
  port: number;
  pid: number;
  count(): Promise<number>;
  stats(): Promise<ReceiverStats>;
  reset(): Promise<void>;
  stop(): Promise<void>;
}

/** Spawns the receiver in a separate process (same runtime as the caller) and waits for its port. */
export async function startReceiver(o: ReceiverOptions = {}): Promise<ReceiverHandle> {
  const host = o.host ?? "127.0.0.1";
  const args = [import.meta.path, "--host", host, "--port", "0", "--status", String(o.status ?? 200), "--delay-ms", String(o.delayMs ?? 0)];
  const proc = Bun.spawn([process.execPath, ...args], {
    stdout: "pipe",
    stderr: o.stderrPath ? Bun.file(o.stderrPath) : "inherit",
    stdin: "ignore",
  });
  const port = await readPort(proc.stdout, proc.exited);
  const url = `http://${host}:${port}`;
  const getJson = async <T>(path: string, init?: RequestInit): Promise<T> => {
    const r = await fetch(url + path, init);
    if (!r.ok) throw new Error(`receiver ${path}: HTTP ${r.status}`);
    return (await r.json()) as T;
  };
  let stopped: Promise<void> | null = null;
  return {
    url,
    port,
    pid: proc.pid,
    count: async () => (await getJson<{ count: number }>("/__count")).count,
    stats: () => getJson<ReceiverStats>("/__stats"),
    reset: async () => void (await getJson("/__reset", { method: "POST" })),
    stop() {
      stopped ??= (async () => {
        proc.kill("SIGTERM");
        const killer = setTimeout(() => proc.kill("SIGKILL"), 2_000);
        await proc.exited;
        clearTimeout(killer);
      })();
      return stopped;
    },
  };
}

async function readPort(stdout: ReadableStream<Uint8Array>, exited: Promise<number>): Promise<number> {
  const reader = stdout.getReader();
  const decoder = new TextDecoder();
  let buf = "";
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error("receiver did not start within 10 s")), 10_000));
  const died = exited.then((code) => Promise.reject(new Error(`receiver exited with code ${code} before listening`)));
  for (;;) {
    const { done, value } = await Promise.race([reader.read(), timeout, died]);
    if (done) throw new Error("receiver closed stdout before printing its port");
    buf += decoder.decode(value, { stream: true });
    const nl = buf.indexOf("\n");
    if (nl >= 0) {
      reader.releaseLock();
      return (JSON.parse(buf.slice(0, nl)) as { port: number }).port;
    }
  }
}

function serve(argv: string[]): void {
  const { values } = parseArgs({
    args: argv,
    options: {
      host: { type: "string", default: "127.0.0.1" },
      port: { type: "string", default: "0" },
      status: { type: "string", default: "200" },
      "delay-ms": { type: "string", default: "0" },
    },
    strict: true,
  });
  const status = Number(values.status);
  const delayMs = Number(values["delay-ms"]);

  let arrival: number[] = [];
  let scheduled: (number | null)[] = [];
  let keys: (string | null)[] = [];
  let attempts: (number | null)[] = [];

  const server = Bun.serve({
    hostname: values.host,
    port: Number(values.port),
    idleTimeout: 60,
    async fetch(req) {
      const now = Date.now();
      const path = new URL(req.url).pathname;
      if (path === "/__count") return Response.json({ count: arrival.length });
      if (path === "/__stats") {
        return Response.json({ count: arrival.length, arrival_ms: arrival, scheduled_ms: scheduled, keys, attempts });
      }
      if (path === "/__reset") {
        arrival = [];
        scheduled = [];
        keys = [];
        attempts = [];
        return Response.json({ ok: true });
      }
      const at = req.headers.get("cronwheel-scheduled-at");
      const parsed = at === null ? NaN : Date.parse(at);
      const attempt = req.headers.get("cronwheel-attempt");
      arrival.push(now);
      scheduled.push(Number.isNaN(parsed) ? null : parsed);
      keys.push(req.headers.get("idempotency-key"));
      attempts.push(attempt === null ? null : Number(attempt));
      if (delayMs > 0) await Bun.sleep(delayMs);
      return new Response(null, { status });
    },
  });
  process.stdout.write(JSON.stringify({ port: server.port }) + "\n");
  const bye = () => {
    server.stop(true);
    process.exit(0);
  };
  process.on("SIGTERM", bye);
  process.on("SIGINT", bye);
}

if (import.meta.main) serve(process.argv.slice(2));
