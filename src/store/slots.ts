// SQL for the per-job concurrency cap, held in the store so it holds across nodes. A slot counts
// while the node holding it is alive (fresh heartbeat in `nodes`). Admission runs in one write
// transaction: the common case (a free slot, nobody older waiting) is one multi-row INSERT for
// many firings; the rest are decided one by one with the overlap policy.

import type { SqlStatement, SqlTx } from "./db.ts";
import type { AdmissionRequest, AdmissionResult, SlotStore } from "../core/ports.ts";
import { LATE_HOLDER_MS, type OverlapDecision, type OverlapFacts } from "../core/overlap.ts";
import { SQL_NOW_MS, type Db } from "./db.ts";
import { IN_LIST, jsonList } from "./rows.ts";

/** Slots held by live nodes only; `?` is the node TTL in ms. */
const LIVE_SLOT = `s.node IN (SELECT id FROM nodes WHERE last_seen_at > ${SQL_NOW_MS} - ?)`;

/** Still claimed by the asking node: anything else (cancelled, re-claimed) is not its to admit. */
const MINE = "f.id = v.firing_id AND +f.state = 'CLAIMED' AND +f.claimed_by = ?";

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
    // The common case in one call (one batch, one transaction): each job's oldest firing takes a
    // free slot. Only what that left undecided needs the interactive transaction below.
    const [first = [], ...later] = rounds([...requests].sort((a, b) => a.scheduledAt - b.scheduledAt));
    const [inserted] = await this.db.batch(takeFree(nodeId, first, nodeTtlMs, nowMs), "write");
    const takenFirst = new Set(inserted!.rows.map((row) => String(row.firing_id)));
    for (const r of first) if (takenFirst.has(r.firingId)) results.set(r.firingId, { kind: "run" });
    const rest = [...first.filter((r) => !takenFirst.has(r.firingId)), ...later.flat()];
    if (rest.length === 0) return results;
    const tx = await this.db.transaction("write");
    try {
      for (const round of rounds(rest.sort((a, b) => a.scheduledAt - b.scheduledAt))) {
        const [rs] = await tx.batch(takeFree(nodeId, round, nodeTtlMs, nowMs));
        const taken = new Set(rs!.rows.map((row) => String(row.firing_id)));
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

  private async decideOne(
    tx: SqlTx,
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
    if (firingIds.length === 0) return;
    await this.db.execute({ sql: `DELETE FROM job_slots WHERE firing_id ${IN_LIST} AND +node = ?`, args: [jsonList(firingIds), nodeId] });
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

/**
 * Slots for firings that already hold one (a retry), or whose job has a free slot and no older
 * firing waiting; then the waiting flag of those that had waited is cleared. Each job appears
 * once per call, so the count each row sees is exact. The first statement returns the taken ids.
 */
function takeFree(nodeId: string, round: AdmissionRequest[], nodeTtlMs: number, nowMs: number): SqlStatement[] {
  const requested = jsonList(round.map((r) => [r.jobId, r.firingId, r.max, r.scheduledAt]));
  const stmts: SqlStatement[] = [
    {
      sql: `WITH v (job_id, firing_id, max, scheduled_at) AS
              (SELECT value->>0, value->>1, value->>2, value->>3 FROM json_each(?))
            INSERT INTO job_slots (job_id, firing_id, node, taken_at, counts)
            SELECT v.job_id, v.firing_id, ?, ?, CASE WHEN ? - v.scheduled_at <= ? OR f.waiting = 1 THEN 1 ELSE 0 END
            FROM v, firings f
            WHERE ${MINE} AND (
              EXISTS (SELECT 1 FROM job_slots s WHERE s.job_id = v.job_id AND s.firing_id = v.firing_id AND ${LIVE_SLOT})
              OR ((SELECT COUNT(*) FROM job_slots s WHERE s.job_id = v.job_id AND ${LIVE_SLOT}) < v.max
                  AND NOT EXISTS (SELECT 1 FROM firings w WHERE w.job_id = v.job_id AND w.waiting > 0 AND w.state = 'CLAIMED'
                                  AND w.id <> v.firing_id AND w.scheduled_at < v.scheduled_at)))
            ON CONFLICT (job_id, firing_id) DO UPDATE SET node = excluded.node
            RETURNING firing_id`,
      args: [requested, nodeId, nowMs, nowMs, LATE_HOLDER_MS, nodeId, nodeTtlMs, nodeTtlMs],
    },
  ];
  // Only firings offered again after waiting have a flag to clear.
  if (!round.some((r) => r.waiting)) return stmts;
  stmts.push({
    sql: `UPDATE firings SET waiting = 0
          WHERE id IN (SELECT firing_id FROM job_slots WHERE firing_id IN (SELECT value->>1 FROM json_each(?)) AND +node = ?)
            AND +waiting > 0`,
    args: [requested, nodeId],
  });
  return stmts;
}
