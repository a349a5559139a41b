// Per-job concurrency cap with the SPEC overlap policies, held in memory on the delivering node.
// A firing holds its slot from its first attempt until it is terminal (retries included), like
// a Kubernetes Job that stays active through its backoff. Catch-up firings never get skipped:
// under a cap they wait their turn.
//
// The policy is judged at the firing's scheduled instant: only slots taken *before* that
// instant count against it. So firings that arrive late together (re-claimed from a dead node,
// a backlog after a stall) run one after another instead of skipping each other: at their own
// instants nothing was running.

import type { Firing, OverlapPolicy } from "./model.ts";

export interface Concurrency {
  max: number;
  overlap: OverlapPolicy;
  max_queue: number;
}

export type Admission = { kind: "run" } | { kind: "wait" } | { kind: "skip"; reason: string };

interface JobSlots {
  /** Slot holders by firing id, with the wall time the slot was taken. */
  holders: Map<string, number>;
  /** In arrival order; `bounded` ones count against coalesce/queue limits (not catch-up or late ones). */
  waiting: { firing: Firing; bounded: boolean }[];
}

export class ConcurrencyGate {
  private readonly jobs = new Map<string, JobSlots>();

  private slots(jobId: string): JobSlots {
    let s = this.jobs.get(jobId);
    if (!s) {
      s = { holders: new Map(), waiting: [] };
      this.jobs.set(jobId, s);
    }
    return s;
  }

  /** Firings already holding slots when the node starts (RUNNING/RETRYING in the store). */
  seed(holders: Map<string, string[]>): void {
    // Taken at an unknown time: count them as taken long ago.
    for (const [jobId, ids] of holders) for (const id of ids) this.slots(jobId).holders.set(id, 0);
  }

  admit(f: Firing, c: Concurrency, nowMs: number): Admission {
    const s = this.slots(f.jobId);
    if (s.holders.has(f.id)) return { kind: "run" }; // a retry of a firing that holds its slot
    if (c.overlap === "allow" || s.holders.size < c.max) {
      s.holders.set(f.id, nowMs);
      return { kind: "run" };
    }
    let heldAtItsInstant = 0;
    for (const takenAt of s.holders.values()) if (takenAt <= f.scheduledAt) heldAtItsInstant++;
    if (f.catchup || heldAtItsInstant < c.max) {
      s.waiting.push({ firing: f, bounded: false });
      return { kind: "wait" };
    }
    const pending = s.waiting.filter((w) => w.bounded).length;
    switch (c.overlap) {
      case "skip":
        return { kind: "skip", reason: `overlap skip: ${s.holders.size} running (max ${c.max})` };
      case "coalesce":
        if (pending >= 1) return { kind: "skip", reason: "overlap coalesce: a firing is already pending" };
        break;
      case "queue":
        if (pending >= c.max_queue) return { kind: "skip", reason: `overlap queue: ${pending} waiting (max_queue ${c.max_queue})` };
        break;
    }
    s.waiting.push({ firing: f, bounded: true });
    return { kind: "wait" };
  }

  /** A firing reached a terminal state: frees its slot and returns the firings now admitted. */
  release(jobId: string, firingId: string, c: Concurrency, nowMs: number): Firing[] {
    const s = this.jobs.get(jobId);
    if (!s) return [];
    s.holders.delete(firingId);
    const admitted: Firing[] = [];
    while (s.waiting.length > 0 && (c.overlap === "allow" || s.holders.size < c.max)) {
      const next = s.waiting.shift()!.firing;
      s.holders.set(next.id, nowMs);
      admitted.push(next);
    }
    if (s.holders.size === 0 && s.waiting.length === 0) this.jobs.delete(jobId);
    return admitted;
  }

  /** Drops a waiting firing (cancelled or withdrawn). */
  dropWaiting(jobId: string, firingId: string): boolean {
    const s = this.jobs.get(jobId);
    if (!s) return false;
    const i = s.waiting.findIndex((w) => w.firing.id === firingId);
    if (i < 0) return false;
    s.waiting.splice(i, 1);
    return true;
  }

  forgetJob(jobId: string): Firing[] {
    const s = this.jobs.get(jobId);
    this.jobs.delete(jobId);
    return (s?.waiting ?? []).map((w) => w.firing);
  }

  /** Empties every overlap queue (shutdown hands these firings back to the store). */
  takeAllWaiting(): Firing[] {
    const out: Firing[] = [];
    for (const s of this.jobs.values()) out.push(...s.waiting.splice(0).map((w) => w.firing));
    return out;
  }

  running(jobId: string): number {
    return this.jobs.get(jobId)?.holders.size ?? 0;
  }

  waiting(jobId: string): number {
    return this.jobs.get(jobId)?.waiting.length ?? 0;
  }
}
