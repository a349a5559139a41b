// Runs `cronwheel serve` as a real child process (for kill -9, SIGSTOP/SIGCONT and restarts).

import { spawn, type Subprocess } from "bun";
import { join } from "node:path";

const ROOT = join(import.meta.dir, "..", "..");

export interface ServeProcess {
  proc: Subprocess;
  url: string;
  logs: string[];
  api(method: string, path: string, body?: unknown): Promise<{ status: number; json: any }>;
  kill9(): Promise<void>;
  terminate(): Promise<number>;
}

export async function startServe(db: string, flags: string[] = []): Promise<ServeProcess> {
  const proc = spawn([process.execPath, join(ROOT, "src/main.ts"), "serve", "--db", db, "--port", "0", ...flags], {
    cwd: ROOT,
    stdout: "ignore",
    stderr: "pipe",
  });
  const logs: string[] = [];
  let url = "";
  const reader = (async () => {
    const decoder = new TextDecoder();
    let buf = "";
    for await (const chunk of proc.stderr as ReadableStream<Uint8Array>) {
      buf += decoder.decode(chunk);
      let nl: number;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        logs.push(line);
        try {
          const rec = JSON.parse(line);
          if (rec.msg === "serving") url = rec.url;
        } catch {}
      }
    }
  })();
  void reader;
  for (let i = 0; i < 300 && !url; i++) {
    if (proc.exitCode !== null) throw new Error(`serve exited early: ${logs.join("\n")}`);
    await Bun.sleep(20);
  }
  if (!url) {
    proc.kill("SIGKILL"); // never leave a half-started node behind
    throw new Error(`serve did not start (it must log "serving" at info level): ${logs.join("\n")}`);
  }
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(url + path, {
      method,
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : null };
  };
  return {
    proc,
    url,
    logs,
    api,
    async kill9() {
      proc.kill("SIGKILL");
      await proc.exited;
    },
    async terminate() {
      proc.kill("SIGTERM");
      return proc.exited;
    },
  };
}

/** Polls until fn returns a truthy value. */
export async function eventually<T>(fn: () => Promise<T | null | undefined | false>, timeoutMs = 15_000, what = "condition"): Promise<T> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(100);
  }
}
