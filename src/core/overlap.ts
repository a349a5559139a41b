// The overlap policy as a pure decision (SPEC "Overlap"), taken when a firing finds its job's
// concurrency cap held. It is judged at the firing's own instant, as if every firing had started
// on time: a slot counts against it only if it was taken at or before that instant by a firing
// that itself started on time (within LATE_HOLDER_MS of its own instant) or after waiting its
// turn under the policy. So firings that run late (re-claimed from a dead node, a backlog after
// a stall or a spike) queue behind each other instead of skipping each other, while a slow
// handler still makes the next firings skip, coalesce or queue. Catch-up firings are never
// skipped either. The store applies the decision atomically.

import type { OverlapPolicy } from "./model.ts";

/** A slot holder that started later than this after its own instant (without having waited under the policy) was late, not slow. */
export const LATE_HOLDER_MS = 1_000;

export interface OverlapFacts {
  overlap: OverlapPolicy;
  max: number;
  maxQueue: number;
  catchup: boolean;
  /** Live slots of the job taken at or before this firing's instant by on-time firings. */
  heldAtInstant: number;
  /** Firings of the job already waiting and counted against the policy's limit. */
  pending: number;
}

/** `wait` with `counted` false does not use up coalesce/queue room. */
export type OverlapDecision = { kind: "wait"; counted: boolean } | { kind: "skip"; reason: string };

export function decideOverlap(f: OverlapFacts): OverlapDecision {
  // Free at its instant and nobody queued before it: it only arrived late, so it takes its turn.
  // With others queued, the queue is what holds it back, and the policy applies as usual.
  if (f.catchup || f.overlap === "allow" || (f.heldAtInstant < f.max && f.pending === 0)) return { kind: "wait", counted: false };
  switch (f.overlap) {
    case "skip":
      return { kind: "skip", reason: `overlap skip: ${Math.max(f.heldAtInstant, f.max)} running (max ${f.max})` };
    case "coalesce":
      return f.pending >= 1
        ? { kind: "skip", reason: "overlap coalesce: a firing is already pending" }
        : { kind: "wait", counted: true };
    case "queue":
      return f.pending >= f.maxQueue
        ? { kind: "skip", reason: `overlap queue: ${f.pending} waiting (max_queue ${f.maxQueue})` }
        : { kind: "wait", counted: true };
  }
}
