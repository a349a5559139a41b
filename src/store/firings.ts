// SQL for the firings table. Every transition is a compare-and-set on the state (and on the
// claiming node), so two nodes racing for one firing, or a cancel racing a delivery, resolve
// in the database: the loser's statement matches no row and it learns so from RETURNING.

import type { Client, InStatement, InValue, Row } from "@libsql/client";
import type { Firing, FiringState } from "../core/model.ts";
import type {
  CancelResult,
  Fence,
  FiringOutcome,
  FiringPage,
  FiringStore,
  NewFiring,
  PlanEntry,
  PlanResult,
} from "../core/ports.ts";
import {
  FIRING_COLUMNS,
  InvalidCursorError,
  decodeCursor,
  encodeCursor,
  placeholders,
  rowToFiring,
} from "./rows.ts";
import { SQL_NOW_MS } from "./db.ts";

/** True only while `holder` still holds the lease at `epoch`: the fencing clause of every leader write. */
const FENCE = "EXISTS (SELECT 1 FROM leases WHERE name = 'leader' AND holder = ? AND epoch = ?)";

function insertFiring(f: NewFiring, epoch: number, nowMs: number, guard: string, guardArgs: InValue[]): InStatement {
  return {
    sql: `INSERT INTO firings (id, job_id, scheduled_at, state, attempts, catchup, manual, epoch, priority,
            next_attempt_at, created_at, updated_at, owner)
          SELECT ?, ?, ?, 'SCHEDULED', 0, ?, ?, ?, ?, ?, ?, ?, ? WHERE ${guard}
          ON CONFLICT (job_id, scheduled_at) DO NOTHING
          RETURNING ${FIRING_COLUMNS}`,
    args: [
      f.id, f.jobId, f.scheduledAt, f.catchup ? 1 : 0, f.manual ? 1 : 0, epoch, f.priority,
      f.scheduledAt, nowMs, nowMs, f.owner, ...guardArgs,
    ],
  };
}

export class LibsqlFiringStore implements FiringStore {
  constructor(private readonly db: Client) {}

  async get(id: string): Promise<Firing | null> {
    const rs = await this.db.execute({ sql: `SELECT ${FIRING_COLUMNS} FROM firings WHERE id = ?`, args: [id] });
    return rs.rows[0] ? rowToFiring(rs.rows[0]) : null;
  }

  listByJob(jobId: string, limit: number, cursor: string | null): Promise<FiringPage> {
    return this.page("job_id = ?", [jobId], limit, cursor);
  }

  list(state: FiringState | null, limit: number, cursor: string | null): Promise<FiringPage> {
    return state === null ? this.page("1 = 1", [], limit, cursor) : this.page("state = ?", [state], limit, cursor);
  }

  /** Newest first by (scheduled_at, id), keyset-paginated. */
  private async page(where: string, args: (string | number)[], limit: number, cursor: string | null): Promise<FiringPage> {
    let keyset = "";
    const keyArgs: (string | number)[] = [];
    if (cursor !== null) {
      const parts = decodeCursor(cursor, ["number", "string"]);
      if (!parts) throw new InvalidCursorError();
      keyset = "AND (scheduled_at < ? OR (scheduled_at = ? AND id < ?))";
      keyArgs.push(parts[0]!, parts[0]!, parts[1]!);
    }
    const rs = await this.db.execute({
      sql: `SELECT ${FIRING_COLUMNS} FROM firings WHERE ${where} ${keyset}
            ORDER BY scheduled_at DESC, id DESC LIMIT ?`,
      args: [...args, ...keyArgs, limit + 1],
    });
    const items = rs.rows.slice(0, limit).map(rowToFiring);
    const last = items[items.length - 1];
    const nextCursor = rs.rows.length > limit && last ? encodeCursor([last.scheduledAt, last.id]) : null;
    return { items, nextCursor };
  }

  async applyPlan(fence: Fence, entries: PlanEntry[], nowMs: number): Promise<PlanResult> {
    const f = [fence.nodeId, fence.epoch];
    const stmts: InStatement[] = [
      { sql: "SELECT holder, epoch FROM leases WHERE name = 'leader'", args: [] },
    ];
    for (const e of entries) {
      stmts.push({
        sql: `UPDATE jobs SET next_fire_at = ?, last_fired_at = COALESCE(?, last_fired_at)
              WHERE id = ? AND version = ? AND ${FENCE}`,
        args: [e.nextFireAt, e.lastFiredAt, e.jobId, e.version, ...f],
      });
      const jobGuard = `${FENCE} AND EXISTS (SELECT 1 FROM jobs WHERE id = ? AND version = ?)`;
      for (const nf of e.firings) stmts.push(insertFiring(nf, fence.epoch, nowMs, jobGuard, [...f, e.jobId, e.version]));
      if (e.skipStoredIds.length > 0) {
        stmts.push({
          sql: `UPDATE firings SET state = 'SKIPPED', last_error = 'misfire policy: not fired',
                  claimed_by = NULL, claim_expires_at = NULL, updated_at = ?
                WHERE id IN (${placeholders(e.skipStoredIds.length)}) AND state IN ('SCHEDULED', 'CLAIMED')
                  AND attempts = 0 AND ${FENCE}`,
          args: [nowMs, ...e.skipStoredIds, ...f],
        });
      }
      if (e.catchupStoredIds.length > 0) {
        stmts.push({
          sql: `UPDATE firings SET catchup = 1, state = 'SCHEDULED', claimed_by = NULL, claim_expires_at = NULL,
                  updated_at = ?
                WHERE id IN (${placeholders(e.catchupStoredIds.length)}) AND state IN ('SCHEDULED', 'CLAIMED')
                  AND attempts = 0 AND ${FENCE}
                RETURNING ${FIRING_COLUMNS}`,
          args: [nowMs, ...e.catchupStoredIds, ...f],
        });
      }
    }
    const results = await this.db.batch(stmts, "write");
    const lease = results[0]?.rows[0];
    if (!lease || String(lease.holder) !== fence.nodeId || Number(lease.epoch) !== fence.epoch) {
      return { fenced: false, inserted: [] };
    }
    const inserted: Firing[] = [];
    for (const rs of results.slice(1)) for (const r of rs.rows) inserted.push(rowToFiring(r));
    return { fenced: true, inserted };
  }

  async insertManual(nf: NewFiring, epoch: number, nowMs: number): Promise<Firing | null> {
    const rs = await this.db.execute(insertFiring(nf, epoch, nowMs, "1 = 1", []));
    return rs.rows[0] ? rowToFiring(rs.rows[0]) : null;
  }

  async missedStored(beforeMs: number, limit: number): Promise<Firing[]> {
    const rs = await this.db.execute({
      sql: `SELECT ${FIRING_COLUMNS} FROM firings
            WHERE state IN ('SCHEDULED', 'CLAIMED') AND scheduled_at < ?
              AND attempts = 0 AND manual = 0 AND catchup = 0
            ORDER BY scheduled_at LIMIT ?`,
      args: [beforeMs, limit],
    });
    return rs.rows.map(rowToFiring);
  }

  async claimReady(nodeId: string, liveIds: string[], untilMs: number, claimTtlMs: number, limit: number, nowMs: number): Promise<Firing[]> {
    const live = liveIds.length > 0 ? liveIds : [nodeId];
    const rs = await this.db.execute({
      sql: `UPDATE firings SET state = 'CLAIMED', claimed_by = ?, claim_expires_at = ${SQL_NOW_MS} + ?, updated_at = ?
            WHERE id IN (SELECT id FROM firings WHERE state IN ('SCHEDULED', 'RETRYING') AND next_attempt_at <= ?
                           AND (owner IS NULL OR owner = ? OR owner NOT IN (${placeholders(live.length)}))
                         ORDER BY next_attempt_at LIMIT ?)
            RETURNING ${FIRING_COLUMNS}`,
      args: [nodeId, claimTtlMs, nowMs, untilMs, nodeId, ...live, limit],
    });
    return rs.rows.map(rowToFiring);
  }

  async markRunning(nodeId: string, ids: string[], nowMs: number): Promise<Firing[]> {
    const out: Firing[] = [];
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = ids.slice(i, i + 500);
      const rs = await this.db.execute({
        sql: `UPDATE firings SET state = 'RUNNING', attempts = attempts + 1, delivered_by = claimed_by, updated_at = ?
              WHERE id IN (${placeholders(chunk.length)}) AND state = 'CLAIMED' AND claimed_by = ?
              RETURNING ${FIRING_COLUMNS}`,
        args: [nowMs, ...chunk, nodeId],
      });
      for (const r of rs.rows) out.push(rowToFiring(r));
    }
    return out;
  }

  async finish(nodeId: string, outcomes: FiringOutcome[], nowMs: number): Promise<Set<string>> {
    const stmts: InStatement[] = outcomes.map((o) => {
      const keepClaim = "claimed_by = NULL, claim_expires_at = NULL";
      const where = "WHERE id = ? AND state = 'RUNNING' AND claimed_by = ? RETURNING id";
      switch (o.state) {
        case "DONE":
          return { sql: `UPDATE firings SET state = 'DONE', last_error = NULL, ${keepClaim}, updated_at = ? ${where}`, args: [nowMs, o.id, nodeId] };
        case "RETRYING":
          return {
            sql: `UPDATE firings SET state = 'RETRYING', last_error = ?, next_attempt_at = ?, ${keepClaim}, updated_at = ? ${where}`,
            args: [o.error, o.nextAttemptAt, nowMs, o.id, nodeId],
          };
        default:
          return { sql: `UPDATE firings SET state = ?, last_error = ?, ${keepClaim}, updated_at = ? ${where}`, args: [o.state, o.error, nowMs, o.id, nodeId] };
      }
    });
    return idsOf(await this.db.batch(stmts, "write"));
  }

  async skipClaimed(nodeId: string, ids: string[], reason: string, nowMs: number): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rs = await this.db.execute({
      sql: `UPDATE firings SET state = 'SKIPPED', last_error = ?, claimed_by = NULL, claim_expires_at = NULL, updated_at = ?
            WHERE id IN (${placeholders(ids.length)}) AND state = 'CLAIMED' AND claimed_by = ? RETURNING id`,
      args: [reason, nowMs, ...ids, nodeId],
    });
    return idsOf([rs]);
  }

  async release(nodeId: string, ids: string[], nowMs: number): Promise<void> {
    if (ids.length === 0) return;
    await this.db.execute({
      sql: `UPDATE firings SET state = CASE WHEN attempts > 0 THEN 'RETRYING' ELSE 'SCHEDULED' END,
              claimed_by = NULL, claim_expires_at = NULL, updated_at = ?
            WHERE id IN (${placeholders(ids.length)}) AND state = 'CLAIMED' AND claimed_by = ?`,
      args: [nowMs, ...ids, nodeId],
    });
  }

  async renewClaims(nodeId: string, claimTtlMs: number): Promise<number> {
    const rs = await this.db.execute({
      sql: `UPDATE firings SET claim_expires_at = ${SQL_NOW_MS} + ? WHERE claimed_by = ? AND state IN ('CLAIMED', 'RUNNING')`,
      args: [claimTtlMs, nodeId],
    });
    return rs.rowsAffected;
  }

  async reclaimExpired(nowMs: number): Promise<number> {
    // A RUNNING firing whose node died may have reached its receiver: it goes back as a retry
    // (at-least-once); the idempotency key lets the receiver drop the duplicate.
    const rs = await this.db.execute({
      sql: `UPDATE firings SET state = CASE WHEN attempts > 0 THEN 'RETRYING' ELSE 'SCHEDULED' END,
              claimed_by = NULL, claim_expires_at = NULL, updated_at = ?
            WHERE state IN ('CLAIMED', 'RUNNING') AND claim_expires_at < ${SQL_NOW_MS}`,
      args: [nowMs],
    });
    return rs.rowsAffected;
  }

  async activeByJob(): Promise<Map<string, string[]>> {
    const rs = await this.db.execute("SELECT job_id, id FROM firings WHERE state IN ('RUNNING', 'RETRYING')");
    const out = new Map<string, string[]>();
    for (const r of rs.rows) {
      const jobId = String(r.job_id);
      const ids = out.get(jobId) ?? [];
      ids.push(String(r.id));
      out.set(jobId, ids);
    }
    return out;
  }

  async cancel(id: string, nowMs: number): Promise<CancelResult> {
    const [waiting, running, current] = await this.db.batch(
      [
        {
          sql: `UPDATE firings SET state = 'CANCELLED', last_error = 'cancelled', claimed_by = NULL,
                  claim_expires_at = NULL, updated_at = ?
                WHERE id = ? AND state IN ('SCHEDULED', 'CLAIMED', 'RETRYING') RETURNING id`,
          args: [nowMs, id],
        },
        {
          sql: "UPDATE firings SET cancel_requested = 1, updated_at = ? WHERE id = ? AND state = 'RUNNING' RETURNING id",
          args: [nowMs, id],
        },
        { sql: "SELECT state FROM firings WHERE id = ?", args: [id] },
      ],
      "write",
    );
    if ((waiting?.rows.length ?? 0) > 0) return "cancel-completed";
    if ((running?.rows.length ?? 0) > 0) return "cancel-accepted";
    return (current?.rows.length ?? 0) > 0 ? "terminal" : "not-found";
  }

  async retryDead(id: string, nowMs: number): Promise<Firing | null> {
    const rs = await this.db.execute({
      sql: `UPDATE firings SET state = 'RETRYING', attempts = 0, next_attempt_at = ?, cancel_requested = 0,
              claimed_by = NULL, claim_expires_at = NULL, updated_at = ?
            WHERE id = ? AND state = 'DEAD' RETURNING ${FIRING_COLUMNS}`,
      args: [nowMs, nowMs, id],
    });
    return rs.rows[0] ? rowToFiring(rs.rows[0]) : null;
  }

  async cancelRequested(ids: string[]): Promise<string[]> {
    const out: string[] = [];
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = ids.slice(i, i + 500);
      const rs = await this.db.execute({
        sql: `SELECT id FROM firings WHERE id IN (${placeholders(chunk.length)}) AND cancel_requested = 1`,
        args: chunk,
      });
      for (const r of rs.rows) out.push(String(r.id));
    }
    return out;
  }
}

function idsOf(results: { rows: Row[] }[]): Set<string> {
  const out = new Set<string>();
  for (const rs of results) for (const r of rs.rows) out.add(String(r.id));
  return out;
}
