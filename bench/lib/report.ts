// Shared figures and output format of the benches: percentiles, delivery analysis of a receiver's
// records (lateness, duplicates, losses, order), and the result as one JSON line
// (`{"bench":"<name>",...}`, machine-readable, grep-able) followed by a short human summary.

import type { ReceiverStats } from "./receiver.ts";

export interface Dist {
  count: number;
  min: number | null;
  p50: number | null;
  p90: number | null;
  p99: number | null;
  max: number | null;
  mean: number | null;
}

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: ArrayLike<number>, p: number): number | null {
  if (sorted.length === 0) return null;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export function dist(values: ArrayLike<number>): Dist {
  const sorted = Float64Array.from(values).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    count: sorted.length,
    min: sorted.length ? sorted[0]! : null,
    p50: percentile(sorted, 50),
    p90: percentile(sorted, 90),
    p99: percentile(sorted, 99),
    max: sorted.length ? sorted[sorted.length - 1]! : null,
    mean: sorted.length ? round(sum / sorted.length, 1) : null,
  };
}

export function round(x: number, digits = 0): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** Events per second, for `count` events over `ms` milliseconds. */
export function ratePerSec(count: number, ms: number): number | null {
  return ms > 0 ? round((count / ms) * 1000, 1) : null;
}

export interface DeliveryAnalysis {
  /** Requests the receiver saw, duplicates and retries included. */
  received: number;
  /** Distinct idempotency keys among them. */
  distinct: number;
  duplicates: number;
  /** Expected firings never seen (expected - distinct), when `expected` is given. */
  lost: number | null;
  /** Requests without an Idempotency-Key or Cronwheel-Scheduled-At header. */
  missing_headers: number;
  /** Requests with Cronwheel-Attempt > 1 (retries; a subset of the duplicates when the first attempt also arrived). */
  retries: number;
  /** arrival - Cronwheel-Scheduled-At of each key's first arrival, ms. */
  lateness_ms: Dist;
  first_arrival_ms: number | null;
  last_arrival_ms: number | null;
  /** First arrivals, in arrival order, whose scheduled instant is earlier than the one before them. */
  order_inversions: number;
  /** Largest amount (ms) by which a first arrival's scheduled instant precedes an earlier-arrived one. */
  max_order_inversion_ms: number;
  oldest_first: boolean;
}

/** Analyses a receiver's records (kept in arrival order) against the number of firings expected. */
export function analyzeDeliveries(s: ReceiverStats, expected: number | null = null): DeliveryAnalysis {
  const seen = new Set<string>();
  const lateness: number[] = [];
  let missing = 0;
  let retries = 0;
  let inversions = 0;
  let maxInversion = 0;
  let maxScheduledSoFar = -Infinity;
  let prevScheduled = -Infinity;
  for (let i = 0; i < s.count; i++) {
    const key = s.keys[i] ?? null;
    const at = s.scheduled_ms[i] ?? null;
    if ((s.attempts[i] ?? 1) > 1) retries++;
    if (key === null || at === null) {
      missing++;
      continue;
    }
    if (seen.has(key)) continue;
    seen.add(key);
    lateness.push(s.arrival_ms[i]! - at);
    if (at < prevScheduled) inversions++;
    if (at < maxScheduledSoFar) maxInversion = Math.max(maxInversion, maxScheduledSoFar - at);
    prevScheduled = at;
    maxScheduledSoFar = Math.max(maxScheduledSoFar, at);
  }
  const distinct = seen.size;
  return {
    received: s.count,
    distinct,
    duplicates: s.count - missing - distinct,
    lost: expected === null ? null : expected - distinct,
    missing_headers: missing,
    retries,
    lateness_ms: dist(lateness),
    first_arrival_ms: s.count ? s.arrival_ms.reduce((m, x) => (x < m ? x : m), Infinity) : null,
    last_arrival_ms: s.count ? s.arrival_ms.reduce((m, x) => (x > m ? x : m), -Infinity) : null,
    order_inversions: inversions,
    max_order_inversion_ms: maxInversion,
    oldest_first: inversions === 0,
  };
}

/** Prints the result as one JSON line starting with {"bench":name,...}, then the human summary lines. */
export function emit(bench: string, figures: Record<string, unknown>, summary: string[]): void {
  console.log(JSON.stringify({ bench, ...figures }));
  for (const line of summary) console.log(`  ${line}`);
}

export function fmtMs(ms: number | null): string {
  if (ms === null) return "-";
  return Math.abs(ms) >= 10_000 ? `${round(ms / 1000, 1)} s` : `${round(ms)} ms`;
}

export function fmtRate(perSec: number | null): string {
  return perSec === null ? "-" : `${Math.round(perSec).toLocaleString("en-US")}/s`;
}

export function fmtDist(d: Dist): string {
  return `p50 ${fmtMs(d.p50)}, p90 ${fmtMs(d.p90)}, p99 ${fmtMs(d.p99)}, max ${fmtMs(d.max)}`;
}
