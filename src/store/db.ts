// Opens the libSQL database (embedded file or remote server) and brings its schema up to date.
// Every other store module receives the Client from here; nothing else creates one.

import { createClient, type Client } from "@libsql/client";
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

export async function openDatabase(url: string, opts: OpenOptions = {}): Promise<Client> {
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
  await migrate(client);
  return client;
}

/** Applies pending migrations in one write transaction, so racing nodes apply each once. */
export async function migrate(client: Client): Promise<number> {
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
