// SQL for the per-job concurrency cap, held in the store so it holds across nodes. A slot counts
// while the node holding it is alive (fresh heartbeat in `nodes`). Admission runs in one write
// transaction: the common case (a free slot, nobody older waiting) is one multi-row INSERT for
// many firings; the rest are decided one by one with the overlap policy.

import type { Transaction } from "@libsql/client";
import type { AdmissionRequest, AdmissionResult, SlotStore } from "../core/ports.ts";
import { LATE_HOLDER_MS, type OverlapDecision, type OverlapFacts } from "../core/overlap.ts";
import { SQL_NOW_MS, type Db } from "./db.ts";
import { chunks, placeholders, rows } from "./rows.ts";

const ROWS_PER_STATEMENT = 250;

/** Slots held by live nodes only; `?` is the node TTL in ms. */
const LIVE_SLOT = `s.node IN (SELECT id FROM nodes WHERE last_seen_at > ${SQL_NOW_MS} - ?)`;

/** Still claimed by the asking node: anything else (cancelled, re-claimed) is not its to admit. */
const MINE = "f.id = v.column2 AND f.state = 'CLAIMED' AND f.claimed_by = ?";

export class LibsqlSlotStore implements SlotStore {
  constructor(private readonly db: Db) {}

  async admit(
    nodeId: string,
    requests: AdmissionRequest[],
    nodeTtlMs: number,
    nowMs: number,
    decide: (f: OverlapFacts) => OverlapDecision,
  ): Promise<Map<string, AdmissionResult>> {
    const results = new Map<string, AdmissionResult>();
    if (requests.length === 0) return results;
    const tx = await this.db.transaction("write");
    try {
      for (const round of rounds([...requests].sort((a, b) => a.scheduledAt - b.scheduledAt))) {
        const taken = await this.takeFree(tx, nodeId, round, nodeTtlMs, nowMs);
        for (const r of round) {
          if (taken.has(r.firingId)) results.set(r.firingId, { kind: "run" });
          else results.set(r.firingId, await this.decideOne(tx, nodeId, r, nodeTtlMs, nowMs, decide));
        }
      }
      await tx.commit();
      return results;
    } finally {
      tx.close();
    }
  }

  /**
   * Slots for firings that already hold one (a retry), or whose job has a free slot and no older
   * firing waiting. Each job appears once per call, so the count each row sees is exact.
   */
  private async takeFree(tx: Transaction, nodeId: string, round: AdmissionRequest[], nodeTtlMs: number, nowMs: number): Promise<Set<string>> {
    const taken = new Set<string>();
    for (const chunk of chunks(round, ROWS_PER_STATEMENT)) {
      const rs = await tx.execute({
        sql: `INSERT INTO job_slots (job_id, firing_id, node, taken_at, counts)
              SELECT v.column1, v.column2, ?, ?, CASE WHEN ? - v.column4 <= ? OR f.waiting = 1 THEN 1 ELSE 0 END
              FROM (VALUES ${rows(chunk.length, 4)}) AS v, firings f
              WHERE ${MINE} AND (
                EXISTS (SELECT 1 FROM job_slots s WHERE s.job_id = v.column1 AND s.firing_id = v.column2 AND ${LIVE_SLOT})
                OR ((SELECT COUNT(*) FROM job_slots s WHERE s.job_id = v.column1 AND ${LIVE_SLOT}) < v.column3
                    AND NOT EXISTS (SELECT 1 FROM firings w WHERE w.job_id = v.column1 AND w.waiting > 0 AND w.state = 'CLAIMED'
                                    AND w.id <> v.column2 AND w.scheduled_at < v.column4)))
              ON CONFLICT (job_id, firing_id) DO UPDATE SET node = excluded.node
              RETURNING firing_id`,
        args: [nodeId, nowMs, nowMs, LATE_HOLDER_MS, ...chunk.flatMap((r) => [r.jobId, r.firingId, r.max, r.scheduledAt]), nodeId, nodeTtlMs, nodeTtlMs],
      });
      for (const row of rs.rows) taken.add(String(row.firing_id));
    }
    // Only firings offered again after waiting have a flag to clear.
    const wasWaiting = round.filter((r) => r.waiting && taken.has(r.firingId)).map((r) => r.firingId);
    for (const ids of chunks(wasWaiting, ROWS_PER_STATEMENT)) {
      await tx.execute({ sql: `UPDATE firings SET waiting = 0 WHERE id IN (${placeholders(ids.length)}) AND waiting > 0`, args: ids });
    }
    return taken;
  }

  private async decideOne(
    tx: Transaction,
    nodeId: string,
    r: AdmissionRequest,
    nodeTtlMs: number,
    nowMs: number,
    decide: (f: OverlapFacts) => OverlapDecision,
  ): Promise<AdmissionResult> {
    const facts = (
      await tx.execute({
        sql: `SELECT
                (SELECT waiting FROM firings WHERE id = ? AND state = 'CLAIMED' AND claimed_by = ?) AS mine,
                (SELECT COUNT(*) FROM job_slots s WHERE s.job_id = ? AND s.taken_at <= ? AND s.counts = 1 AND ${LIVE_SLOT}) AS held,
                (SELECT COUNT(*) FROM firings WHERE job_id = ? AND waiting = 1 AND state = 'CLAIMED' AND id <> ?) AS pending`,
        args: [r.firingId, nodeId, r.jobId, r.scheduledAt, nodeTtlMs, r.jobId, r.firingId],
      })
    ).rows[0]!;
    if (facts.mine === null) return { kind: "gone" };
    if (Number(facts.mine) > 0) return { kind: "wait" }; // already admitted to wait: keep its place
    const d = decide({
      overlap: r.overlap,
      max: r.max,
      maxQueue: r.maxQueue,
      catchup: r.catchup,
      heldAtInstant: Number(facts.held),
      pending: Number(facts.pending),
    });
    if (d.kind === "wait") {
      await tx.execute({ sql: "UPDATE firings SET waiting = ? WHERE id = ?", args: [d.counted ? 1 : 2, r.firingId] });
      return { kind: "wait" };
    }
    await tx.execute({
      sql: `UPDATE firings SET state = 'SKIPPED', last_error = ?, waiting = 0, claimed_by = NULL, updated_at = ?
            WHERE id = ? AND state = 'CLAIMED' AND claimed_by = ?`,
      args: [d.reason, nowMs, r.firingId, nodeId],
    });
    return d;
  }

  async release(nodeId: string, firingIds: string[]): Promise<void> {
    for (const ids of chunks(firingIds, 500)) {
      await this.db.execute({
        sql: `DELETE FROM job_slots WHERE firing_id IN (${placeholders(ids.length)}) AND node = ?`,
        args: [...ids, nodeId],
      });
    }
  }
}

/** Splits requests so each job appears at most once per round, keeping order within a job. */
function rounds(requests: AdmissionRequest[]): AdmissionRequest[][] {
  const out: AdmissionRequest[][] = [];
  const seen = new Map<string, number>();
  for (const r of requests) {
    const k = seen.get(r.jobId) ?? 0;
    seen.set(r.jobId, k + 1);
    (out[k] ??= []).push(r);
  }
  return out;
}
