// Opens the libSQL database (embedded file or remote server) and brings its schema up to date.
// Every other store module receives the Db from here; nothing else creates one.

import { createClient } from "@libsql/client";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { MIGRATIONS } from "./migrations.ts";
import { openEmbedded, WriteSerializedDb } from "./serialized-db.ts";
import type { SqlMode, SqlResult, SqlStatement, WorkerReply, WorkerRequest } from "./worker-protocol.ts";

export type { SqlResult, SqlStatement } from "./worker-protocol.ts";

/** The database's own clock in epoch ms: leases are judged on it, never on a node's clock. */
export const SQL_NOW_MS = "CAST(unixepoch('subsec') * 1000 AS INTEGER)";

export interface OpenOptions {
  /** Busy timeout for `file:` databases; per connection, so it must go through createClient. */
  busyTimeoutMs?: number;
  /**
   * Run an embedded database on the calling thread instead of its own. For tests in virtual
   * time, which need every store call to finish within the microtasks of the step that made it.
   */
  sameThread?: boolean;
}

export function isEmbedded(url: string): boolean {
  return url.startsWith("file:") || url === ":memory:";
}

export interface SqlTx {
  execute(stmt: SqlStatement): Promise<SqlResult>;
  batch(stmts: SqlStatement[]): Promise<SqlResult[]>;
  commit(): Promise<void>;
  rollback(): Promise<void>;
  close(): void;
}

/** What the store needs of a database: statements, batches (one transaction), interactive transactions. */
export interface Db {
  execute(stmt: SqlStatement): Promise<SqlResult>;
  batch(stmts: SqlStatement[], mode?: SqlMode): Promise<SqlResult[]>;
  transaction(mode?: SqlMode): Promise<SqlTx>;
  close(): void;
}

/**
 * The embedded database, run on its own thread (db-worker.ts). The embedded driver is
 * synchronous: on the node's thread every statement stopped timers and webhook requests for as
 * long as it ran, and a spike's writes could not overlap its sends. Each call is one message.
 */
class WorkerDb implements Db {
  private readonly worker: Worker;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: unknown) => void }>();
  private nextId = 1;
  private closed = false;
  /** Set when the thread died: every later call fails with it instead of waiting forever. */
  private failure: Error | null = null;

  constructor() {
    this.worker = new Worker(workerUrl());
    this.worker.onmessage = (event: MessageEvent<WorkerReply>) => {
      const r = event.data;
      const p = this.pending.get(r.id);
      if (!p) return;
      this.pending.delete(r.id);
      if (r.ok) p.resolve(r.value);
      else p.reject(Object.assign(new Error(r.error.message), { name: r.error.name, code: r.error.code }));
    };
    this.worker.onerror = (event) => {
      const err = new Error(`database thread failed: ${event.message}`);
      this.failure = err;
      for (const p of this.pending.values()) p.reject(err);
      this.pending.clear();
    };
  }

  call<T>(req: DistributiveOmit<WorkerRequest, "id">): Promise<T> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.closed) return Promise.reject(new Error("database is closed"));
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.worker.postMessage({ ...req, id } as WorkerRequest);
    });
  }

  execute(stmt: SqlStatement): Promise<SqlResult> {
    return this.call({ op: "execute", stmt });
  }

  batch(stmts: SqlStatement[], mode?: SqlMode): Promise<SqlResult[]> {
    return this.call({ op: "batch", stmts, mode });
  }

  async transaction(mode?: SqlMode): Promise<SqlTx> {
    const tx = await this.call<number>({ op: "begin", mode });
    let done = false;
    return {
      execute: (stmt) => this.call({ op: "tx.execute", tx, stmt }),
      batch: (stmts) => this.call({ op: "tx.batch", tx, stmts }),
      commit: () => this.call({ op: "tx.commit", tx }),
      rollback: () => this.call({ op: "tx.rollback", tx }),
      close: () => {
        if (done) return;
        done = true;
        // Messages are handled in order: nothing sent after this runs inside the transaction.
        void this.call({ op: "tx.close", tx }).catch(() => {});
      },
    };
  }

  close(): void {
    if (this.closed) return;
    const closing = this.call({ op: "close" });
    this.closed = true;
    void closing.finally(() => this.worker.terminate());
  }
}

/**
 * In the compiled binary this module is bundled into the entrypoint at the root of its file
 * system, and the worker (its own entrypoint, see scripts/build.ts) keeps its path under src/.
 */
function workerUrl(): URL {
  const bundled = import.meta.url.includes("/$bunfs/") || import.meta.url.includes("/~BUN/");
  return new URL(bundled ? "./store/db-worker.ts" : "./db-worker.ts", import.meta.url);
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

export async function openDatabase(url: string, opts: OpenOptions = {}): Promise<Db> {
  if (url.startsWith("file:")) {
    const path = url.slice("file:".length).split("?")[0] ?? "";
    if (path && path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  }
  const busyTimeoutMs = opts.busyTimeoutMs ?? 10_000;
  let db: Db;
  if (isEmbedded(url) && !opts.sameThread) {
    const worker = new WorkerDb();
    await worker.call({ op: "open", url, busyTimeoutMs });
    db = worker;
  } else if (isEmbedded(url)) {
    db = await openEmbedded(url, busyTimeoutMs);
  } else {
    db = new WriteSerializedDb(createClient({ url, timeout: busyTimeoutMs }));
  }
  await migrate(db);
  return db;
}

/** Applies pending migrations in one write transaction, so racing nodes apply each once. */
export async function migrate(client: Db): Promise<number> {
  await client.execute(
    "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)",
  );
  const tx = await client.transaction("write");
  try {
    const rs = await tx.execute("SELECT COALESCE(MAX(version), 0) AS v FROM schema_migrations");
    const current = Number(rs.rows[0]?.v ?? 0);
    let applied = 0;
    for (const m of MIGRATIONS) {
      if (m.version <= current) continue;
      for (const sql of m.statements) await tx.execute(sql);
      await tx.execute({
        sql: "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
        args: [m.version, m.name, Date.now()],
      });
      applied++;
    }
    await tx.commit();
    return applied;
  } finally {
    tx.close();
  }
}
