// The leader lease: one row with holder, a monotonic epoch and an expiry judged on the
// database's clock, so clock skew between nodes can never make two leaders.

import type { Fence, LeaseInfo, LeaseStore } from "../core/ports.ts";
import { SQL_NOW_MS, type Db } from "./db.ts";

export class LibsqlLeaseStore implements LeaseStore {
  constructor(private readonly db: Db) {}

  async tryAcquire(nodeId: string, ttlMs: number): Promise<LeaseInfo | null> {
    const rs = await this.db.execute({
      sql: `UPDATE leases SET holder = ?, epoch = epoch + 1, expires_at = ${SQL_NOW_MS} + ?
            WHERE name = 'leader' AND expires_at <= ${SQL_NOW_MS}
            RETURNING holder, epoch, expires_at, ${SQL_NOW_MS} AS db_now`,
      args: [nodeId, ttlMs],
    });
    const r = rs.rows[0];
    return r ? toInfo(r) : null;
  }

  async renew(fence: Fence, ttlMs: number): Promise<boolean> {
    const rs = await this.db.execute({
      sql: `UPDATE leases SET expires_at = ${SQL_NOW_MS} + ?
            WHERE name = 'leader' AND holder = ? AND epoch = ? AND expires_at > ${SQL_NOW_MS}
            RETURNING epoch`,
      args: [ttlMs, fence.nodeId, fence.epoch],
    });
    return rs.rows.length === 1;
  }

  async release(fence: Fence): Promise<void> {
    await this.db.execute({
      sql: "UPDATE leases SET expires_at = 0 WHERE name = 'leader' AND holder = ? AND epoch = ?",
      args: [fence.nodeId, fence.epoch],
    });
  }

  async read(): Promise<LeaseInfo> {
    const rs = await this.db.execute(
      `SELECT holder, epoch, expires_at, ${SQL_NOW_MS} AS db_now FROM leases WHERE name = 'leader'`,
    );
    const r = rs.rows[0];
    if (!r) throw new Error("lease row missing: migrations did not run");
    return toInfo(r);
  }
}

function toInfo(r: Record<string, unknown>): LeaseInfo {
  return {
    holder: r.holder === null ? null : String(r.holder),
    epoch: Number(r.epoch),
    expiresAt: Number(r.expires_at),
    dbNowMs: Number(r.db_now),
  };
}
