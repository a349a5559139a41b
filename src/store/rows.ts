// Maps result rows to the domain types and back, and encodes keyset cursors.
// Times are INTEGER epoch ms in every column; booleans are 0/1.

type Row = Record<string, unknown>;
import type { Firing, FiringState, Job, JobSpec } from "../core/model.ts";
import type { EnqueuedFiring } from "../core/ports.ts";

const num = (v: unknown): number => Number(v);
const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v));

export const JOB_COLUMNS =
  "id, spec, paused, next_fire_at, last_fired_at, anchor_at, version, created_at, updated_at";

export function rowToJob(r: Row): Job {
  return {
    spec: JSON.parse(String(r.spec)) as JobSpec,
    paused: num(r.paused) === 1,
    nextFireAt: numOrNull(r.next_fire_at),
    lastFiredAt: numOrNull(r.last_fired_at),
    anchorAt: num(r.anchor_at),
    version: num(r.version),
    createdAt: num(r.created_at),
    updatedAt: num(r.updated_at),
  };
}

export function jobArgs(j: Job): (string | number | null)[] {
  return [
    j.spec.id,
    JSON.stringify(j.spec),
    j.paused ? 1 : 0,
    j.nextFireAt,
    j.lastFiredAt,
    j.anchorAt,
    j.version,
    j.createdAt,
    j.updatedAt,
  ];
}

export const FIRING_COLUMNS =
  "id, job_id, scheduled_at, state, attempts, catchup, manual, epoch, priority, last_error, next_attempt_at, claimed_by, cancel_requested, created_at, updated_at, owner, delivered_by, waiting";

export function rowToFiring(r: Row): Firing {
  return {
    id: String(r.id),
    jobId: String(r.job_id),
    scheduledAt: num(r.scheduled_at),
    state: String(r.state) as FiringState,
    attempts: num(r.attempts),
    catchup: num(r.catchup) === 1,
    manual: num(r.manual) === 1,
    epoch: num(r.epoch),
    lastError: r.last_error === null ? null : String(r.last_error),
    nextAttemptAt: num(r.next_attempt_at),
    claimedBy: r.claimed_by === null ? null : String(r.claimed_by),
    cancelRequested: num(r.cancel_requested) === 1,
    owner: r.owner === null || r.owner === undefined ? null : String(r.owner),
    deliveredBy: r.delivered_by === null || r.delivered_by === undefined ? null : String(r.delivered_by),
    waiting: num(r.waiting ?? 0) > 0,
    createdAt: num(r.created_at),
    updatedAt: num(r.updated_at),
  };
}

export const ENQUEUED_COLUMNS = "id, job_id, scheduled_at, owner, epoch, state, catchup";

export function rowToEnqueued(r: Row): EnqueuedFiring {
  return {
    id: String(r.id),
    jobId: String(r.job_id),
    scheduledAt: num(r.scheduled_at),
    owner: r.owner === null ? null : String(r.owner),
    epoch: num(r.epoch),
    state: String(r.state) as FiringState,
    catchup: num(r.catchup) === 1,
  };
}

export function encodeCursor(parts: (string | number)[]): string {
  return Buffer.from(JSON.stringify(parts)).toString("base64url");
}

/** Null for a cursor this server did not make; the API turns that into a 400. */
export function decodeCursor(cursor: string, shape: ("string" | "number")[]): (string | number)[] | null {
  try {
    const parts: unknown = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8"));
    if (!Array.isArray(parts) || parts.length !== shape.length) return null;
    return parts.every((p, i) => typeof p === shape[i]) ? (parts as (string | number)[]) : null;
  } catch {
    return null;
  }
}

export class InvalidCursorError extends Error {
  constructor() {
    super("cursor is not one this server returned");
  }
}

/**
 * `IN` over a list bound as one JSON array parameter (see jsonList): the statement text is the
 * same for any number of ids, so it is parsed once per call however long the list, and SQLite's
 * parameter limit never applies. Pair it with unary `+` on the other indexed columns of the
 * WHERE (`+state = ...`): otherwise, for lists of 20 or more, SQLite prefers scanning an index
 * on those columns (every CLAIMED firing) over looking each id up, which made a spike's
 * per-batch writes cost O(backlog).
 */
export const IN_LIST = "IN (SELECT value FROM json_each(?))";

/** The parameter of IN_LIST, or of a `json_each(?)` row source (an array of row arrays). */
export function jsonList(items: unknown[]): string {
  return JSON.stringify(items);
}

/** `?, ?, ?` for n values. */
export function placeholders(n: number): string {
  return new Array(n).fill("?").join(", ");
}
