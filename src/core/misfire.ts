// Misfire policy as a pure decision: given the instants a job missed (some already stored as
// firings, some never enqueued), which to fire as catch-up and which stored ones to drop.
// SPEC: fire_once = the most recent missed instant; fire_all = the most recent max_catchup,
// oldest first; skip = none. One-shot jobs treat fire_all as fire_once.

import type { MisfirePolicy } from "./model.ts";

export interface StoredMiss {
  id: string;
  scheduledAt: number;
}

export interface MisfireDecision {
  /** Instants never enqueued that get a catch-up firing, ascending. */
  fireComputed: number[];
  /** Stored firings kept and marked catch-up. */
  catchupStoredIds: string[];
  /** Stored firings the policy drops (SKIPPED). */
  skipStoredIds: string[];
}

/** How many of the most recent missed instants a policy keeps. */
export function catchupLimit(policy: MisfirePolicy, maxCatchup: number, oneShot: boolean): number {
  if (policy === "skip") return 0;
  if (policy === "fire_all" && !oneShot) return maxCatchup;
  return 1;
}

export function decideMisfire(
  policy: MisfirePolicy,
  maxCatchup: number,
  oneShot: boolean,
  stored: StoredMiss[],
  computed: number[],
): MisfireDecision {
  const byInstant = new Map<number, StoredMiss | null>();
  for (const at of computed) byInstant.set(at, null);
  for (const s of stored) byInstant.set(s.scheduledAt, s); // a stored firing wins over its computed twin
  const instants = [...byInstant.keys()].sort((a, b) => a - b);
  const keep = catchupLimit(policy, maxCatchup, oneShot);
  const chosen = new Set(keep > 0 ? instants.slice(-keep) : []);
  const decision: MisfireDecision = { fireComputed: [], catchupStoredIds: [], skipStoredIds: [] };
  for (const at of instants) {
    const s = byInstant.get(at) ?? null;
    if (chosen.has(at)) {
      if (s) decision.catchupStoredIds.push(s.id);
      else decision.fireComputed.push(at);
    } else if (s) {
      decision.skipStoredIds.push(s.id);
    }
  }
  return decision;
}
