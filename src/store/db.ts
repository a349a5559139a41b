// Opens the libSQL database (embedded file or remote server) and brings its schema up to date.
// Every other store module receives the Client from here; nothing else creates one.

import { createClient, type Client, type InStatement, type ResultSet, type Transaction, type TransactionMode } from "@libsql/client";
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { MIGRATIONS } from "./migrations.ts";

/** The database's own clock in epoch ms: leases are judged on it, never on a node's clock. */
export const SQL_NOW_MS = "CAST(unixepoch('subsec') * 1000 AS INTEGER)";

export interface OpenOptions {
  /** Busy timeout for `file:` databases; per connection, so it must go through createClient. */
  busyTimeoutMs?: number;
}

export function isEmbedded(url: string): boolean {
  return url.startsWith("file:") || url === ":memory:";
}

/** The part of the libSQL client the store uses. */
export type Db = Pick<Client, "execute" | "batch" | "transaction" | "close">;

/**
 * Serialises this process's writes. The embedded driver runs each statement synchronously, so a
 * write on one connection while another connection of the same process holds the write lock
 * (an interactive transaction between two of its awaits) blocks the whole event loop until the
 * busy timeout — a deadlock, since the holder can never continue. One writer at a time per
 * process avoids it and costs nothing: synchronous statements cannot overlap anyway. Readers
 * are not held back (WAL lets them run beside the writer). Other processes wait on the busy
 * timeout as usual: their transactions progress on their own.
 */
class WriteSerializedDb implements Db {
  private tail: Promise<unknown> = Promise.resolve();

  constructor(private readonly client: Client) {}

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn, fn);
    this.tail = run.catch(() => {});
    return run;
  }

  execute(stmt: InStatement | string, args?: never): Promise<ResultSet> {
    const sql = typeof stmt === "string" ? stmt : stmt.sql;
    if (/^\s*(SELECT|WITH)\b/i.test(sql) && !/\bRETURNING\b/i.test(sql)) return this.client.execute(stmt as InStatement);
    return this.exclusive(() => this.client.execute(stmt as InStatement));
  }

  batch(stmts: Parameters<Client["batch"]>[0], mode?: TransactionMode): Promise<ResultSet[]> {
    if (mode === "read") return this.client.batch(stmts, mode);
    return this.exclusive(() => this.client.batch(stmts, mode));
  }

  transaction(mode?: TransactionMode): Promise<Transaction> {
    if (mode === "read") return this.client.transaction(mode);
    // Held from BEGIN until the transaction is closed, however it ends.
    return new Promise<Transaction>((resolveTx, rejectTx) => {
      void this.exclusive(async () => {
        let tx: Transaction;
        try {
          tx = await this.client.transaction(mode);
        } catch (err) {
          rejectTx(err);
          return;
        }
        await new Promise<void>((released) => {
          const close = tx.close.bind(tx);
          tx.close = () => {
            close();
            released();
          };
          resolveTx(tx);
        });
      });
    });
  }

  close(): void {
    this.client.close();
  }
}

export async function openDatabase(url: string, opts: OpenOptions = {}): Promise<Db> {
  if (url.startsWith("file:")) {
    const path = url.slice("file:".length).split("?")[0] ?? "";
    if (path && path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  }
  const client = createClient({ url, timeout: opts.busyTimeoutMs ?? 10_000 });
  if (isEmbedded(url)) {
    // WAL lets readers (API, status page) run beside the one writer without blocking it.
    await client.execute("PRAGMA journal_mode=WAL");
    await client.execute("PRAGMA synchronous=NORMAL");
  }
  const db = new WriteSerializedDb(client);
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
