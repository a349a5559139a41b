// SQL for the firings table. Every transition is a compare-and-set on the state (and on the
// claiming node), so two nodes racing for one firing, or a cancel racing a delivery, resolve
// in the database: the loser's statement matches no row and it learns so from RETURNING.

import type { SqlStatement } from "./db.ts";
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
  ENQUEUED_COLUMNS,
  FIRING_COLUMNS,
  InvalidCursorError,
  decodeCursor,
  encodeCursor,
  IN_LIST,
  jsonList,
  rowToEnqueued,
  rowToFiring,
} from "./rows.ts";
import { SQL_NOW_MS, type Db } from "./db.ts";

function insertManualFiring(f: NewFiring, epoch: number, nowMs: number): SqlStatement {
  return {
    sql: `INSERT INTO firings (id, job_id, scheduled_at, state, attempts, catchup, manual, epoch, priority,
            next_attempt_at, created_at, updated_at, owner)
          SELECT ?, ?, ?, 'SCHEDULED', 0, ?, ?, ?, ?, ?, ?, ?, ?
          WHERE EXISTS (SELECT 1 FROM jobs WHERE id = ?)
          ON CONFLICT (job_id, scheduled_at) DO NOTHING
          RETURNING ${FIRING_COLUMNS}`,
    args: [
      f.id, f.jobId, f.scheduledAt, f.catchup ? 1 : 0, f.manual ? 1 : 0, epoch, f.priority,
      f.scheduledAt, nowMs, nowMs, f.owner, f.jobId,
    ],
  };
}

export class LibsqlFiringStore implements FiringStore {
  constructor(private readonly db: Db) {}

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

  /**
   * One batch, which runs as one write transaction: every write is conditional on the lease
   * being ours at this epoch, and since the transaction excludes every other writer until it
   * commits, the lease cannot change in between. A batch is one call to the store (one message
   * to the embedded database's thread), so no lock is held while this thread is busy elsewhere.
   * Each statement takes all its rows as one JSON array (json_each): one short statement per
   * kind of change, whatever the step's size.
   */
  async applyPlan(fence: Fence, entries: PlanEntry[], nowMs: number): Promise<PlanResult> {
    const FENCED = "EXISTS (SELECT 1 FROM leases WHERE name = 'leader' AND holder = ? AND epoch = ?)";
    const fenceArgs = [fence.nodeId, fence.epoch];
    const stmts: SqlStatement[] = [{ sql: `SELECT 1 AS ours FROM leases WHERE name = 'leader' AND holder = ? AND epoch = ?`, args: fenceArgs }];
    if (entries.length > 0) {
      stmts.push({
        sql: `UPDATE jobs SET next_fire_at = v.value->>1, last_fired_at = COALESCE(v.value->>2, jobs.last_fired_at)
              FROM json_each(?) AS v
              WHERE jobs.id = v.value->>0 AND jobs.version = v.value->>3 AND ${FENCED}`,
        args: [jsonList(entries.map((e) => [e.jobId, e.nextFireAt, e.lastFiredAt, e.version])), ...fenceArgs],
      });
    }
    const returning: number[] = []; // statements whose rows are enqueued firings
    const versions = new Map(entries.map((e) => [e.jobId, e.version]));
    const firings = entries.flatMap((e) => e.firings);
    if (firings.length > 0) {
      // The join on the version enqueues nothing for a job changed since the plan was made.
      returning.push(stmts.length);
      stmts.push({
        sql: `INSERT INTO firings (id, job_id, scheduled_at, state, attempts, catchup, manual, epoch, priority,
                next_attempt_at, created_at, updated_at, owner)
              SELECT v.value->>0, v.value->>1, v.value->>2, 'SCHEDULED', 0, v.value->>3, 0, ?, v.value->>4, v.value->>2, ?, ?, v.value->>5
              FROM json_each(?) AS v JOIN jobs ON jobs.id = v.value->>1 AND jobs.version = v.value->>6
              WHERE ${FENCED}
              ON CONFLICT (job_id, scheduled_at) DO NOTHING
              RETURNING ${ENQUEUED_COLUMNS}`,
        args: [
          fence.epoch, nowMs, nowMs,
          jsonList(firings.map((f) => [f.id, f.jobId, f.scheduledAt, f.catchup ? 1 : 0, f.priority, f.owner, versions.get(f.jobId)!])),
          ...fenceArgs,
        ],
      });
    }
    const skipIds = entries.flatMap((e) => e.skipStoredIds);
    if (skipIds.length > 0) {
      stmts.push({
        sql: `UPDATE firings SET state = 'SKIPPED', last_error = 'misfire policy: not fired',
                claimed_by = NULL, updated_at = ?
              WHERE id ${IN_LIST} AND +state IN ('SCHEDULED', 'RETRYING') AND attempts = 0 AND waiting = 0 AND ${FENCED}`,
        args: [nowMs, jsonList(skipIds), ...fenceArgs],
      });
    }
    const catchupIds = entries.flatMap((e) => e.catchupStoredIds);
    if (catchupIds.length > 0) {
      returning.push(stmts.length);
      stmts.push({
        sql: `UPDATE firings SET catchup = 1, state = 'SCHEDULED', claimed_by = NULL,
                updated_at = ?
              WHERE id ${IN_LIST} AND +state IN ('SCHEDULED', 'RETRYING') AND attempts = 0 AND waiting = 0 AND ${FENCED}
              RETURNING ${ENQUEUED_COLUMNS}`,
        args: [nowMs, jsonList(catchupIds), ...fenceArgs],
      });
    }
    const results = await this.db.batch(stmts, "write");
    if ((results[0]?.rows.length ?? 0) === 0) return { fenced: false, inserted: [] };
    return { fenced: true, inserted: returning.flatMap((i) => results[i]!.rows.map(rowToEnqueued)) };
  }

  async insertManual(nf: NewFiring, epoch: number, nowMs: number): Promise<Firing | null> {
    const rs = await this.db.execute(insertManualFiring(nf, epoch, nowMs));
    return rs.rows[0] ? rowToFiring(rs.rows[0]) : null;
  }

  async missedStored(beforeMs: number, limit: number): Promise<Firing[]> {
    const rs = await this.db.execute({
      sql: `SELECT ${FIRING_COLUMNS} FROM firings INDEXED BY firings_ready
            WHERE state IN ('SCHEDULED', 'RETRYING') AND next_attempt_at < ?
              AND attempts = 0 AND manual = 0 AND catchup = 0 AND waiting = 0
            ORDER BY next_attempt_at LIMIT ?`,
      args: [beforeMs, limit],
    });
    return rs.rows.map(rowToFiring);
  }

  /**
   * INDEXED BY: left to itself SQLite picks firings_by_state for `state IN (...)` and sorts
   * every stored SCHEDULED firing on each call, which at 5,000 firings/s (50,000 enqueued ahead)
   * took 35-50 ms per claim and stalled delivery behind it.
   */
  async claimReady(nodeId: string, liveIds: string[], untilMs: number, missedBeforeMs: number, limit: number, nowMs: number): Promise<Firing[]> {
    const live = liveIds.length > 0 ? liveIds : [nodeId];
    const rs = await this.db.execute({
      sql: `UPDATE firings SET state = 'CLAIMED', claimed_by = ?, updated_at = ?
            WHERE id IN (SELECT id FROM firings INDEXED BY firings_ready
                         WHERE state IN ('SCHEDULED', 'RETRYING') AND next_attempt_at <= ? AND cancel_requested = 0
                           AND NOT (attempts = 0 AND catchup = 0 AND manual = 0 AND waiting = 0 AND next_attempt_at < ?)
                           AND (owner IS NULL OR owner = ? OR owner NOT ${IN_LIST})
                         ORDER BY next_attempt_at LIMIT ?)
            RETURNING ${FIRING_COLUMNS}`,
      args: [nodeId, nowMs, untilMs, missedBeforeMs, nodeId, jsonList(live), limit],
    });
    return rs.rows.map(rowToFiring);
  }

  async markRunning(nodeId: string, ids: string[], nowMs: number): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rs = await this.db.execute({
      sql: `UPDATE firings SET state = 'RUNNING', attempts = attempts + 1, delivered_by = claimed_by, updated_at = ?
            WHERE id ${IN_LIST} AND +state = 'CLAIMED' AND +claimed_by = ?
            RETURNING id`,
      args: [nowMs, jsonList(ids), nodeId],
    });
    return idsOf([rs]);
  }

  async finish(nodeId: string, outcomes: FiringOutcome[], nowMs: number): Promise<Set<string>> {
    const release = "claimed_by = NULL";
    const where = "+state = 'RUNNING' AND +claimed_by = ? RETURNING id";
    // Successes, the bulk of a spike, share one statement per chunk; the rest carry their own values.
    const done = outcomes.filter((o) => o.state === "DONE").map((o) => o.id);
    const stmts: SqlStatement[] = [];
    if (done.length > 0) {
      stmts.push({
        sql: `UPDATE firings SET state = 'DONE', last_error = NULL, ${release}, updated_at = ? WHERE id ${IN_LIST} AND ${where}`,
        args: [nowMs, jsonList(done), nodeId],
      });
    }
    for (const o of outcomes) {
      if (o.state === "DONE") continue;
      stmts.push(
        o.state === "RETRYING"
          ? {
              // A cancel that arrived during the attempt ends the firing here: no retry.
              sql: `UPDATE firings SET state = CASE WHEN cancel_requested = 1 THEN 'CANCELLED' ELSE 'RETRYING' END,
                      last_error = ?, next_attempt_at = ?, ${release}, updated_at = ? WHERE id = ? AND ${where}`,
              args: [o.error, o.nextAttemptAt, nowMs, o.id, nodeId],
            }
          : {
              sql: `UPDATE firings SET state = ?, last_error = ?, ${release}, updated_at = ? WHERE id = ? AND ${where}`,
              args: [o.state, o.error, nowMs, o.id, nodeId],
            },
      );
    }
    // A firing that ended gives its concurrency slot back in the same transaction.
    const ended = outcomes.filter((o) => o.state !== "RETRYING").map((o) => o.id);
    const retried = outcomes.filter((o) => o.state === "RETRYING").map((o) => o.id);
    const results = await this.db.batch(
      [
        ...stmts,
        ...releaseSlots(nodeId, ended),
        // Retries that a cancel turned into CANCELLED above give their slot back too.
        ...(retried.length === 0
          ? []
          : [
              {
                sql: `DELETE FROM job_slots WHERE +node = ? AND firing_id IN
                        (SELECT id FROM firings WHERE id ${IN_LIST} AND +state = 'CANCELLED')`,
                args: [nodeId, jsonList(retried)],
              },
            ]),
      ],
      "write",
    );
    return idsOf(results.slice(0, stmts.length));
  }

  async skipClaimed(nodeId: string, ids: string[], reason: string, nowMs: number): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rs = await this.db.execute({
      sql: `UPDATE firings SET state = 'SKIPPED', last_error = ?, waiting = 0, claimed_by = NULL, updated_at = ?
            WHERE id ${IN_LIST} AND +state = 'CLAIMED' AND +claimed_by = ? RETURNING id`,
      args: [reason, nowMs, jsonList(ids), nodeId],
    });
    return idsOf([rs]);
  }

  async release(nodeId: string, ids: string[], nowMs: number): Promise<void> {
    if (ids.length === 0) return;
    await this.db.execute({
      sql: `UPDATE firings SET state = CASE WHEN cancel_requested = 1 THEN 'CANCELLED' WHEN attempts > 0 THEN 'RETRYING' ELSE 'SCHEDULED' END,
              claimed_by = NULL, updated_at = ?
            WHERE id ${IN_LIST} AND +state = 'CLAIMED' AND +claimed_by = ?`,
      args: [nowMs, jsonList(ids), nodeId],
    });
  }

  async releaseAllHeldBy(nodeId: string, nowMs: number): Promise<number> {
    const [rs] = await this.db.batch(
      [
        {
          sql: `UPDATE firings SET state = CASE WHEN cancel_requested = 1 THEN 'CANCELLED' WHEN attempts > 0 THEN 'RETRYING' ELSE 'SCHEDULED' END,
                  claimed_by = NULL, updated_at = ?
                WHERE claimed_by = ? AND state IN ('CLAIMED', 'RUNNING')`,
          args: [nowMs, nodeId],
        },
        { sql: "DELETE FROM job_slots WHERE node = ?", args: [nodeId] },
      ],
      "write",
    );
    return rs?.rowsAffected ?? 0;
  }

  async dropOrphans(nodeId: string, ids: string[], nowMs: number): Promise<void> {
    if (ids.length === 0) return;
    const mine = `id ${IN_LIST} AND +state = 'CLAIMED' AND +claimed_by = ?`;
    await this.db.batch(
      [
        {
          sql: `UPDATE firings SET state = 'CANCELLED', last_error = 'job deleted', waiting = 0, claimed_by = NULL, updated_at = ?
                WHERE ${mine} AND NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.id = firings.job_id)`,
          args: [nowMs, jsonList(ids), nodeId],
        },
        {
          sql: `UPDATE firings SET state = CASE WHEN cancel_requested = 1 THEN 'CANCELLED' WHEN attempts > 0 THEN 'RETRYING' ELSE 'SCHEDULED' END,
                  claimed_by = NULL, updated_at = ?
                WHERE ${mine}`,
          args: [nowMs, jsonList(ids), nodeId],
        },
      ],
      "write",
    );
  }

  async reclaimExpired(nodeTtlMs: number, nowMs: number): Promise<number> {
    // A claim holds while its node's heartbeat is fresh, so nodes renew one row, not every
    // claim. A RUNNING firing whose node died may have reached its receiver: it goes back as a
    // retry (at-least-once); the idempotency key lets the receiver drop the duplicate.
    const alive = `SELECT id FROM nodes WHERE last_seen_at > ${SQL_NOW_MS} - ?`;
    const [rs] = await this.db.batch(
      [
        {
          sql: `UPDATE firings SET state = CASE WHEN cancel_requested = 1 THEN 'CANCELLED' WHEN attempts > 0 THEN 'RETRYING' ELSE 'SCHEDULED' END,
                  claimed_by = NULL, updated_at = ?
                WHERE state IN ('CLAIMED', 'RUNNING') AND claimed_by NOT IN (${alive})`,
          args: [nowMs, nodeTtlMs],
        },
        // Slots of dead nodes no longer count; after a while they are only clutter.
        { sql: `DELETE FROM job_slots WHERE node NOT IN (${alive})`, args: [60_000] },
      ],
      "write",
    );
    return rs?.rowsAffected ?? 0;
  }

  async cancel(id: string, nowMs: number): Promise<CancelResult> {
    const [waiting, , running, current] = await this.db.batch(
      [
        {
          sql: `UPDATE firings SET state = 'CANCELLED', last_error = 'cancelled', claimed_by = NULL,
                  waiting = 0, updated_at = ?
                WHERE id = ? AND state IN ('SCHEDULED', 'CLAIMED', 'RETRYING') RETURNING id`,
          args: [nowMs, id],
        },
        // A RETRYING firing holds its job's slot between attempts: cancelled, it gives it back.
        { sql: "DELETE FROM job_slots WHERE firing_id = ? AND changes() > 0", args: [id] },
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
              claimed_by = NULL, updated_at = ?
            WHERE id = ? AND state = 'DEAD' AND EXISTS (SELECT 1 FROM jobs WHERE jobs.id = firings.job_id)
            RETURNING ${FIRING_COLUMNS}`,
      args: [nowMs, nowMs, id],
    });
    return rs.rows[0] ? rowToFiring(rs.rows[0]) : null;
  }

  async recent(nowMs: number, limit: number): Promise<Firing[]> {
    const rs = await this.db.execute({
      sql: `SELECT ${FIRING_COLUMNS} FROM firings WHERE scheduled_at <= ? ORDER BY scheduled_at DESC LIMIT ?`,
      args: [nowMs, limit],
    });
    return rs.rows.map(rowToFiring);
  }

  async backlog(nowMs: number, jobId?: string): Promise<number> {
    const rs = await this.db.execute(
      jobId === undefined
        ? {
            sql: `SELECT COUNT(*) AS n FROM firings
                  WHERE state IN ('SCHEDULED', 'CLAIMED', 'RUNNING', 'RETRYING') AND scheduled_at <= ?`,
            args: [nowMs],
          }
        : {
            sql: `SELECT COUNT(*) AS n FROM firings
                  WHERE job_id = ? AND scheduled_at <= ? AND state IN ('SCHEDULED', 'CLAIMED', 'RUNNING', 'RETRYING')`,
            args: [jobId, nowMs],
          },
    );
    return Number(rs.rows[0]?.n ?? 0);
  }

  async cancelRequested(ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    const rs = await this.db.execute({ sql: `SELECT id FROM firings WHERE id ${IN_LIST} AND +cancel_requested = 1`, args: [jsonList(ids)] });
    return rs.rows.map((r) => String(r.id));
  }
}

function idsOf(results: { rows: Record<string, unknown>[] }[]): Set<string> {
  const out = new Set<string>();
  for (const rs of results) for (const r of rs.rows) out.add(String(r.id));
  return out;
}

/** Only this node's hold: a firing re-claimed elsewhere meanwhile keeps the slot it took there. */
function releaseSlots(nodeId: string, firingIds: string[]): SqlStatement[] {
  if (firingIds.length === 0) return [];
  return [{ sql: `DELETE FROM job_slots WHERE firing_id ${IN_LIST} AND +node = ?`, args: [jsonList(firingIds), nodeId] }];
}
