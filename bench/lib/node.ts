// cronwheel nodes as child processes for benches: start on a free port, wait for /healthz,
// read their stderr (JSON log lines), measure their CPU and memory from /proc, stop or kill -9.

import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { join, resolve } from "node:path";

export const ROOT = resolve(import.meta.dir, "..", "..");

export async function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.once("error", rej);
    srv.listen(0, "127.0.0.1", () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => res(port));
    });
  });
}

/** CPU time (user + system, ms) a process has used so far, from /proc (Linux); null elsewhere. */
export function cpuMs(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // utime, stime in USER_HZ (100)
  } catch {
    return null;
  }
}

/** A memory figure (MB) of a live process from /proc/PID/status (Linux), e.g. VmRSS or VmHWM; null elsewhere. */
function procStatusMb(pid: number, field: "VmRSS" | "VmHWM"): number | null {
  try {
    const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Math.round((Number(m[1]) / 1024) * 10) / 10 : null;
  } catch {
    return null;
  }
}

/** Peak resident set (MB) of a live process (VmHWM). */
export function peakRssMb(pid: number): number | null {
  return procStatusMb(pid, "VmHWM");
}

/** Current resident set (MB) of a live process (VmRSS). */
export function rssMb(pid: number): number | null {
  return procStatusMb(pid, "VmRSS");
}

export interface NodeProcessOptions {
  /** Where stdout/stderr files go. */
  dir: string;
  /** libSQL URL, e.g. file:/tmp/x/cw.db. */
  db: string;
  name: string;
  flags?: string[];
  /** Arguments for bun itself (profilers, preloads). */
  bunArgs?: string[];
  /** Called right after the spawn, before /healthz answers, so a caller can stop the node if it is interrupted meanwhile. */
  onSpawn?: (node: NodeProcess) => void;
}

export interface NodeProcess {
  name: string;
  url: string;
  pid: number;
  exitCode(): number | null;
  stderrLines(): string[];
  /** Lines at warn or error level, or not JSON at all (a crash, a stack). */
  problems(): string[];
  kill9(): Promise<void>;
  /** SIGTERM, then SIGKILL after 5 s. */
  stop(): Promise<void>;
  signal(sig: "SIGSTOP" | "SIGCONT"): void;
}

export async function startNodeProcess(o: NodeProcessOptions): Promise<NodeProcess> {
  const port = await freePort();
  const stderrPath = join(o.dir, `${o.name}.stderr`);
  const proc = Bun.spawn(
    [process.execPath, ...(o.bunArgs ?? []), "src/main.ts", "serve", "--db", o.db, "--port", String(port), ...(o.flags ?? [])],
    { cwd: ROOT, stdout: Bun.file(join(o.dir, `${o.name}.stdout`)), stderr: Bun.file(stderrPath), stdin: "ignore" },
  );
  let exit: number | null = null;
  void proc.exited.then((code) => {
    exit = code;
  });
  const stderrLines = (): string[] => {
    try {
      return readFileSync(stderrPath, "utf8").split("\n").filter((l) => l.trim() !== "");
    } catch {
      return [];
    }
  };
  const url = `http://127.0.0.1:${port}`;
  const node: NodeProcess = {
    name: o.name,
    url,
    pid: proc.pid,
    exitCode: () => exit,
    stderrLines,
    problems: () =>
      stderrLines().filter((line) => {
        try {
          const level = (JSON.parse(line) as { level?: string }).level;
          return level === "warn" || level === "error";
        } catch {
          return true;
        }
      }),
    async kill9() {
      if (exit !== null) return;
      proc.kill("SIGKILL");
      await proc.exited;
    },
    async stop() {
      if (exit !== null) return;
      proc.kill("SIGTERM");
      const killer = setTimeout(() => proc.kill("SIGKILL"), 5_000);
      await proc.exited;
      clearTimeout(killer);
    },
    signal(sig) {
      if (exit === null) proc.kill(sig);
    },
  };
  o.onSpawn?.(node);
  const deadline = Date.now() + 20_000;
  for (;;) {
    if (exit !== null) throw new Error(`${o.name} exited with code ${exit} before serving:\n${stderrLines().slice(-20).join("\n")}`);
    try {
      if ((await fetch(`${url}/healthz`)).ok) break;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) {
      proc.kill("SIGKILL"); // never leave a half-started node behind
      throw new Error(`${o.name} did not answer /healthz within 20 s`);
    }
    await Bun.sleep(100);
  }
  return node;
}

export interface ClusterView {
  leader: string | null;
  epoch: number;
  nodes: { id: string; alive: boolean }[];
}

/** GET /v1/cluster of one node; null while it cannot answer. */
export async function clusterView(node: NodeProcess): Promise<ClusterView | null> {
  try {
    const r = await fetch(`${node.url}/v1/cluster`);
    return r.ok ? ((await r.json()) as ClusterView) : null;
  } catch {
    return null;
  }
}

/**
 * Waits until every node sees a leader and all of them alive, so the hash ring the leader
 * spreads firings with already has every node on it.
 */
export async function waitForCluster(nodes: NodeProcess[], timeoutMs = 20_000): Promise<ClusterView> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const views = await Promise.all(nodes.map(clusterView));
    const ready = views.every((v) => v !== null && v.leader !== null && v.nodes.filter((n) => n.alive).length >= nodes.length);
    if (ready) return views[0]!;
    if (Date.now() > deadline) throw new Error(`the ${nodes.length} nodes did not agree on a leader and see each other alive within ${timeoutMs} ms`);
    await Bun.sleep(100);
  }
}
