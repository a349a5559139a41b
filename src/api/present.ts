// The JSON shapes the API returns for jobs and firings: instants as RFC 3339 UTC strings.

import type { Firing, Job } from "../core/model.ts";

const iso = (ms: number | null): string | null => (ms === null ? null : new Date(ms).toISOString());

export function presentJob(job: Job) {
  const { id, ...rest } = job.spec;
  return {
    id, // first, for people reading curl output
    ...rest,
    paused: job.paused,
    next_fire_at: iso(job.nextFireAt),
    last_fired_at: iso(job.lastFiredAt),
    created_at: iso(job.createdAt),
    updated_at: iso(job.updatedAt),
  };
}

export function presentFiring(f: Firing) {
  return {
    id: f.id,
    job_id: f.jobId,
    scheduled_at: iso(f.scheduledAt),
    state: f.state,
    attempts: f.attempts,
    catchup: f.catchup,
    manual: f.manual,
    epoch: f.epoch,
    last_error: f.lastError,
    next_attempt_at: iso(f.nextAttemptAt),
    cancel_requested: f.cancelRequested,
    owner: f.owner,
    delivered_by: f.deliveredBy,
    waiting: f.waiting,
    created_at: iso(f.createdAt),
    updated_at: iso(f.updatedAt),
  };
}
