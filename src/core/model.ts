// The domain's nouns: a job as users define it (after defaults are applied) and a firing.
// Plain data only; every other core module and the store speak in these types.

export type DstGapPolicy = "shift" | "skip";
export type DstOverlapPolicy = "first" | "both";

/** Optional window of a schedule, as epoch milliseconds (inclusive bounds). */
export interface ScheduleWindow {
  start_at?: string;
  end_at?: string;
}

export interface AtSchedule extends ScheduleWindow {
  /** RFC 3339 instant. */
  at: string;
}

export interface CronSchedule extends ScheduleWindow {
  /** 5 fields, or 6 with leading seconds; `@hourly`-style macros too. */
  cron: string;
  /** IANA zone name; never an offset. */
  timezone: string;
  /** Unset means the default for the job's kind (wildcard or fixed-time). */
  dst_gap?: DstGapPolicy;
  dst_overlap?: DstOverlapPolicy;
}

export interface EverySchedule extends ScheduleWindow {
  /** `<n>ms|s|m|h|d`. */
  every: string;
}

export type Schedule = AtSchedule | CronSchedule | EverySchedule;

export type MisfirePolicy = "fire_once" | "fire_all" | "skip";
export type OverlapPolicy = "skip" | "coalesce" | "queue" | "allow";
export type Priority = "high" | "normal" | "low";

export interface JobTarget {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: unknown;
  timeout_ms: number;
}

export interface RetryPolicy {
  max_attempts: number;
  initial_backoff_ms: number;
  max_backoff_ms: number;
}

/** A job with every default filled in: what the store keeps and the API returns. */
export interface JobSpec {
  id: string;
  schedule: Schedule;
  target: JobTarget;
  retry: RetryPolicy;
  misfire: { policy: MisfirePolicy; max_catchup: number };
  concurrency: { max: number; overlap: OverlapPolicy; max_queue: number };
  priority: Priority;
  metadata: Record<string, unknown>;
}

/** A job row: the spec plus the scheduler's durable bookkeeping. */
export interface Job {
  spec: JobSpec;
  paused: boolean;
  /** Next instant to enqueue (epoch ms); null once the schedule is exhausted. */
  nextFireAt: number | null;
  /** Scheduled instant of the latest firing enqueued (epoch ms). */
  lastFiredAt: number | null;
  /** Anchor of `every` schedules: start_at, else creation time. */
  anchorAt: number;
  createdAt: number;
  updatedAt: number;
  /** Bumped on every change by the API; the planner advances a job only at the version it read. */
  version: number;
}

/**
 * Firing states (SPEC "Firings"):
 * - SCHEDULED: enqueued by the leader, waiting for its instant (or for a concurrency slot);
 * - CLAIMED: a node took it for delivery (the claim holds while that node's heartbeat is fresh);
 * - RUNNING: the webhook request is in flight;
 * - RETRYING: an attempt failed retryably; next attempt at next_attempt_at;
 * - DONE: a 2xx came back;
 * - DEAD: attempts exhausted or a non-retryable answer;
 * - CANCELLED: cancelled through the API, or withdrawn because its job was deleted;
 * - SKIPPED: dropped by the overlap or misfire policy (reason in last_error).
 */
export type FiringState =
  | "SCHEDULED"
  | "CLAIMED"
  | "RUNNING"
  | "RETRYING"
  | "DONE"
  | "DEAD"
  | "CANCELLED"
  | "SKIPPED";

export interface Firing {
  id: string;
  jobId: string;
  scheduledAt: number;
  state: FiringState;
  attempts: number;
  catchup: boolean;
  /** Epoch of the leader lease that enqueued it (the fencing token). */
  epoch: number;
  lastError: string | null;
  createdAt: number;
  updatedAt: number;
  /** When the next delivery attempt is due (scheduled_at, or the retry time). */
  nextAttemptAt: number;
  claimedBy: string | null;
  cancelRequested: boolean;
  /** Set for firings made by POST /v1/jobs/{id}/trigger. */
  manual: boolean;
  /** Node assigned to deliver it (hash ring by job id at enqueue time); null = any. */
  owner: string | null;
  /** Node that made the latest attempt. */
  deliveredBy: string | null;
  /** Due, and waiting for a slot of its job's concurrency cap. */
  waiting: boolean;
}

/** `<job id>:<scheduled instant in ms>` — the same on every attempt and duplicate. */
export function idempotencyKey(jobId: string, scheduledAt: number): string {
  return `${jobId}:${scheduledAt}`;
}
