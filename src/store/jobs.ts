// SQL for the jobs table: one method per statement (or per atomic batch of statements).
// Withdrawing "planned" firings means deleting first attempts that are not yet due: they were
// enqueued ahead of their instant and never existed as far as a receiver is concerned.

import type { SqlArg, SqlStatement } from "./worker-protocol.ts";
import type { Job } from "../core/model.ts";
import type { JobPage, JobStore } from "../core/ports.ts";
import {
  InvalidCursorError,
  JOB_COLUMNS,
  decodeCursor,
  encodeCursor,
  jobArgs,
  IN_LIST,
  jsonList,
  placeholders,
  rowToJob,
} from "./rows.ts";
import type { Db } from "./db.ts";

const INSERT_JOB = `INSERT INTO jobs (${JOB_COLUMNS}) VALUES (${placeholders(9)})`;

function withdrawPlanned(jobId: string, nowMs: number): { sql: string; args: SqlArg[] } {
  return {
    sql: `DELETE FROM firings WHERE job_id = ? AND state IN ('SCHEDULED', 'CLAIMED')
          AND scheduled_at > ? AND attempts = 0 AND manual = 0`,
    args: [jobId, nowMs],
  };
}

export class LibsqlJobStore implements JobStore {
  constructor(private readonly db: Db) {}

  async insert(job: Job): Promise<boolean> {
    const rs = await this.db.execute({
      sql: `${INSERT_JOB} ON CONFLICT (id) DO NOTHING`,
      args: jobArgs(job),
    });
    return rs.rowsAffected === 1;
  }

  async insertMany(jobs: Job[]): Promise<string[] | { duplicate: string }> {
    const ids = jobs.map((j) => j.spec.id);
    const tx = await this.db.transaction("write");
    try {
      // All or nothing: look for existing ids first, inside the same write transaction.
      const rs = await tx.execute({ sql: `SELECT id FROM jobs WHERE id ${IN_LIST} LIMIT 1`, args: [jsonList(ids)] });
      if (rs.rows.length > 0) {
        await tx.rollback();
        return { duplicate: String(rs.rows[0]!.id) };
      }
      // One statement for the whole batch: its rows travel as one JSON array.
      await tx.execute({
        sql: `INSERT INTO jobs (${JOB_COLUMNS})
              SELECT ${JOB_COLUMNS.split(", ").map((_, i) => `value->>${i}`).join(", ")} FROM json_each(?)`,
        args: [jsonList(jobs.map(jobArgs))],
      });
      await tx.commit();
      return ids;
    } finally {
      tx.close();
    }
  }

  async upsert(job: Job, nowMs: number): Promise<"created" | "replaced"> {
    const [rs] = await this.db.batch(
      [
        {
          // `paused` is state, not definition: replacing a job keeps it paused or not.
          sql: `${INSERT_JOB} ON CONFLICT (id) DO UPDATE SET
                  spec = excluded.spec, next_fire_at = CASE WHEN paused = 1 THEN NULL ELSE excluded.next_fire_at END,
                  anchor_at = excluded.anchor_at, version = version + 1, updated_at = excluded.updated_at
                RETURNING version`,
          args: jobArgs(job),
        },
        withdrawPlanned(job.spec.id, nowMs),
      ],
      "write",
    );
    return Number(rs?.rows[0]?.version) === 1 ? "created" : "replaced";
  }

  async get(id: string): Promise<Job | null> {
    const rs = await this.db.execute({ sql: `SELECT ${JOB_COLUMNS} FROM jobs WHERE id = ?`, args: [id] });
    return rs.rows[0] ? rowToJob(rs.rows[0]) : null;
  }

  async getMany(ids: string[]): Promise<Job[]> {
    if (ids.length === 0) return [];
    const rs = await this.db.execute({ sql: `SELECT ${JOB_COLUMNS} FROM jobs WHERE id ${IN_LIST}`, args: [jsonList(ids)] });
    return rs.rows.map(rowToJob);
  }

  async list(limit: number, cursor: string | null): Promise<JobPage> {
    let after = "";
    if (cursor !== null) {
      const parts = decodeCursor(cursor, ["string"]);
      if (!parts) throw new InvalidCursorError();
      after = String(parts[0]);
    }
    const rs = await this.db.execute({
      sql: `SELECT ${JOB_COLUMNS} FROM jobs WHERE id > ? ORDER BY id LIMIT ?`,
      args: [after, limit + 1],
    });
    const items = rs.rows.slice(0, limit).map(rowToJob);
    const last = items[items.length - 1];
    return { items, nextCursor: rs.rows.length > limit && last ? encodeCursor([last.spec.id]) : null };
  }

  async update(job: Job, expectVersion: number, nowMs: number, withdraw: boolean): Promise<boolean> {
    const stmts: SqlStatement[] = [
      {
        sql: `UPDATE jobs SET spec = ?, next_fire_at = ?, anchor_at = ?, version = version + 1, updated_at = ?
              WHERE id = ? AND version = ? RETURNING id`,
        args: [JSON.stringify(job.spec), job.nextFireAt, job.anchorAt, nowMs, job.spec.id, expectVersion],
      },
    ];
    if (withdraw) stmts.push(withdrawPlannedIfUpdated(job.spec.id, nowMs));
    const [rs] = await this.db.batch(stmts, "write");
    return (rs?.rows.length ?? 0) === 1;
  }

  async delete(id: string, nowMs: number): Promise<{ deleted: boolean; runningIds: string[] }> {
    const [del, , , running] = await this.db.batch(
      [
        { sql: "DELETE FROM jobs WHERE id = ? RETURNING id", args: [id] },
        withdrawPlanned(id, nowMs),
        {
          sql: `UPDATE firings SET state = 'CANCELLED', last_error = 'job deleted', claimed_by = NULL,
                  waiting = 0, updated_at = ?
                WHERE job_id = ? AND state IN ('SCHEDULED', 'CLAIMED', 'RETRYING')`,
          args: [nowMs, id],
        },
        {
          sql: `UPDATE firings SET cancel_requested = 1, updated_at = ?
                WHERE job_id = ? AND state = 'RUNNING' RETURNING id`,
          args: [nowMs, id],
        },
        // Slots of running firings go when they end; the others' go now.
        {
          sql: `DELETE FROM job_slots WHERE job_id = ?
                AND firing_id NOT IN (SELECT id FROM firings WHERE job_id = ? AND state = 'RUNNING')`,
          args: [id, id],
        },
      ],
      "write",
    );
    return {
      deleted: (del?.rows.length ?? 0) === 1,
      runningIds: (running?.rows ?? []).map((r) => String(r.id)),
    };
  }

  async setPaused(id: string, paused: boolean, nextFireAt: number | null, nowMs: number, expectVersion?: number): Promise<Job | null> {
    const stmts: SqlStatement[] = [
      {
        sql: `UPDATE jobs SET paused = ?, next_fire_at = ?, version = version + 1, updated_at = ?
              WHERE id = ? AND (? IS NULL OR version = ?) RETURNING ${JOB_COLUMNS}`,
        args: [paused ? 1 : 0, nextFireAt, nowMs, id, expectVersion ?? null, expectVersion ?? null],
      },
    ];
    // Pausing withdraws what was planned ahead; firings already due keep running.
    if (paused) stmts.push(withdrawPlanned(id, nowMs));
    const [rs] = await this.db.batch(stmts, "write");
    return rs?.rows[0] ? rowToJob(rs.rows[0]) : null;
  }

  async nextFiresPerMinute(fromMs: number, toMs: number): Promise<Map<number, number>> {
    // Reads the next_fire_at index only (a covering range scan), never the job rows.
    const rs = await this.db.execute({
      sql: `SELECT (next_fire_at / 60000) * 60000 AS minute, COUNT(*) AS n FROM jobs
            WHERE next_fire_at IS NOT NULL AND paused = 0 AND next_fire_at >= ? AND next_fire_at < ?
            GROUP BY minute`,
      args: [fromMs, toMs],
    });
    return new Map(rs.rows.map((r) => [Number(r.minute), Number(r.n)]));
  }

  async due(untilMs: number, limit: number): Promise<Job[]> {
    const rs = await this.db.execute({
      sql: `SELECT ${JOB_COLUMNS} FROM jobs
            WHERE next_fire_at IS NOT NULL AND paused = 0 AND next_fire_at <= ?
            ORDER BY next_fire_at LIMIT ?`,
      args: [untilMs, limit],
    });
    return rs.rows.map(rowToJob);
  }
}

/** Withdraw only if the preceding UPDATE matched (a lost CAS must change nothing). */
function withdrawPlannedIfUpdated(jobId: string, nowMs: number): SqlStatement {
  const w = withdrawPlanned(jobId, nowMs);
  return { sql: `${w.sql} AND changes() = 1`, args: w.args };
}
