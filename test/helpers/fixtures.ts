// Job rows for tests that talk to core or the store directly: SPEC defaults, overridable.

import type { Job, JobSpec } from "../../src/core/model.ts";

export function testJob(spec: Partial<JobSpec> & { id: string }, row: Partial<Omit<Job, "spec">> = {}): Job {
  return {
    spec: {
      schedule: { every: "1s" },
      target: { url: "http://127.0.0.1:9/x", method: "POST", headers: {}, timeout_ms: 1000 },
      retry: { max_attempts: 3, initial_backoff_ms: 1000, max_backoff_ms: 60_000 },
      misfire: { policy: "fire_once", max_catchup: 100 },
      concurrency: { max: 1, overlap: "skip", max_queue: 10 },
      priority: "normal",
      metadata: {},
      ...spec,
    },
    paused: false,
    nextFireAt: null,
    lastFiredAt: null,
    anchorAt: 0,
    createdAt: 0,
    updatedAt: 0,
    version: 1,
    ...row,
  };
}
