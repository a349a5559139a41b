// Cluster membership rows: each node upserts its heartbeat with the database's clock, so
// "alive" is judged on one clock for every node.

import type { NodeRecord, NodeStore } from "../core/ports.ts";
import { SQL_NOW_MS, type Db } from "./db.ts";

export class LibsqlNodeStore implements NodeStore {
  constructor(private readonly db: Db) {}

  async heartbeat(id: string, address: string): Promise<void> {
    await this.db.execute({
      sql: `INSERT INTO nodes (id, address, started_at, last_seen_at) VALUES (?, ?, ${SQL_NOW_MS}, ${SQL_NOW_MS})
            ON CONFLICT (id) DO UPDATE SET address = excluded.address, last_seen_at = excluded.last_seen_at`,
      args: [id, address],
    });
  }

  async list(): Promise<{ nodes: NodeRecord[]; dbNowMs: number }> {
    const [rows, now] = await this.db.batch(
      [
        "SELECT id, address, started_at, last_seen_at FROM nodes ORDER BY id",
        `SELECT ${SQL_NOW_MS} AS now`,
      ],
      "read",
    );
    return {
      nodes: (rows?.rows ?? []).map((r) => ({
        id: String(r.id),
        address: String(r.address),
        startedAt: Number(r.started_at),
        lastSeenAt: Number(r.last_seen_at),
      })),
      dbNowMs: Number(now?.rows[0]?.now),
    };
  }

  async remove(id: string): Promise<void> {
    await this.db.execute({ sql: "DELETE FROM nodes WHERE id = ?", args: [id] });
  }

  async prune(notSeenForMs: number): Promise<number> {
    const rs = await this.db.execute({
      sql: `DELETE FROM nodes WHERE last_seen_at < ${SQL_NOW_MS} - ?`,
      args: [notSeenForMs],
    });
    return rs.rowsAffected;
  }
}
