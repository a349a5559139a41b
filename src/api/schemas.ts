// valibot schemas for every input the API takes. Defaults of SPEC are applied here, so what
// leaves this file is a complete JobSpec; unknown fields are rejected so typos do not pass silently.

import * as v from "valibot";
import { newJobId } from "../core/ids.ts";
import type { JobSpec, Schedule } from "../core/model.ts";
import { parseEveryMs, parseInstantMs, validateSchedule } from "../core/schedule.ts";

export const LIMITS = {
  batchJobs: 10_000,
  idLength: 128,
  urlLength: 2_048,
  headerCount: 50,
  headerValueLength: 4_096,
  bodyBytes: 64 * 1024,
  metadataBytes: 16 * 1024,
  pageSize: 1_000,
  previewCount: 1_000,
} as const;

const ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._~-]*$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** Headers the HTTP client owns, or cronwheel sets itself; a job may not set them. */
const RESERVED_HEADERS = new Set([
  "host", "content-length", "transfer-encoding", "connection", "keep-alive", "upgrade", "te", "trailer",
  "idempotency-key", "cronwheel-job-id", "cronwheel-firing-id", "cronwheel-attempt", "cronwheel-scheduled-at",
  "cronwheel-signature",
]);

export const JobId = v.pipe(
  v.string(),
  v.minLength(1, "must not be empty"),
  v.maxLength(LIMITS.idLength, `must be at most ${LIMITS.idLength} characters`),
  v.regex(ID_PATTERN, "may contain letters, digits, '.', '_', '~' and '-', and must start with a letter or digit"),
);

const Instant = v.pipe(
  v.string(),
  v.check((s) => parseInstantMs(s) !== null, "must be an RFC 3339 instant such as 2027-01-01T09:00:00Z"),
);

const windowEntries = { start_at: v.optional(Instant), end_at: v.optional(Instant) };

export const AtSchedule = v.strictObject({ at: Instant, ...windowEntries });
export const CronSchedule = v.strictObject({
  cron: v.pipe(v.string(), v.maxLength(256)),
  timezone: v.optional(v.pipe(v.string(), v.maxLength(64)), "UTC"),
  dst_gap: v.optional(v.picklist(["shift", "skip"])),
  dst_overlap: v.optional(v.picklist(["first", "both"])),
  ...windowEntries,
});
export const EverySchedule = v.strictObject({
  every: v.pipe(v.string(), v.check((s) => parseEveryMs(s) !== null, 'must be "<n>ms", "<n>s", "<n>m", "<n>h" or "<n>d" with n >= 1')),
  ...windowEntries,
});
const NoSchedule = v.custom<never>(() => false, 'must have exactly one of "at", "cron" or "every"');

/** Chooses the variant by its key so errors talk about the variant the user meant. */
export const ScheduleSchema = v.pipe(
  v.lazy((input) => {
    if (typeof input !== "object" || input === null) return NoSchedule;
    if ("cron" in input) return CronSchedule;
    if ("every" in input) return EverySchedule;
    if ("at" in input) return AtSchedule;
    return NoSchedule;
  }),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const error = validateSchedule(dataset.value as Schedule);
    if (error !== null) addIssue({ message: error });
  }),
);

function jsonSize<T>(max: number, what: string) {
  const message = `${what} must be at most ${max} bytes of JSON`;
  return v.check<T, string>((value) => JSON.stringify(value ?? null).length <= max, message);
}

const TargetSchema = v.strictObject({
  url: v.pipe(
    v.string(),
    v.maxLength(LIMITS.urlLength, `must be at most ${LIMITS.urlLength} characters`),
    v.url("must be an absolute URL"),
    v.check((u) => /^https?:\/\//i.test(u), "must be an http:// or https:// URL"),
  ),
  method: v.optional(
    v.pipe(v.string(), v.toUpperCase(), v.picklist(["GET", "POST", "PUT", "PATCH", "DELETE"], "must be GET, POST, PUT, PATCH or DELETE")),
    "POST",
  ),
  headers: v.optional(
    v.pipe(
      v.record(
        v.pipe(v.string(), v.regex(HEADER_NAME, "is not a valid header name"), v.check((h) => !RESERVED_HEADERS.has(h.toLowerCase()), "is set by cronwheel or the HTTP client")),
        v.pipe(v.string(), v.maxLength(LIMITS.headerValueLength), v.check((s) => !/[\r\n\0]/.test(s), "must not contain line breaks")),
      ),
      v.check((h) => Object.keys(h).length <= LIMITS.headerCount, `at most ${LIMITS.headerCount} headers`),
    ),
    {},
  ),
  body: v.optional(v.pipe(v.unknown(), jsonSize(LIMITS.bodyBytes, "body"))),
  timeout_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(300_000)), 10_000),
});

const RetrySchema = v.pipe(
  v.strictObject({
    max_attempts: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(100)), 3),
    initial_backoff_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(3_600_000)), 1_000),
    max_backoff_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(86_400_000)), 60_000),
  }),
  v.forward(
    v.check((r) => r.max_backoff_ms >= r.initial_backoff_ms, "must be at least initial_backoff_ms"),
    ["max_backoff_ms"],
  ),
);

const MisfireSchema = v.strictObject({
  policy: v.optional(v.picklist(["fire_once", "fire_all", "skip"]), "fire_once"),
  max_catchup: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10_000)), 100),
});

const ConcurrencySchema = v.strictObject({
  max: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1_000)), 1),
  overlap: v.optional(v.picklist(["skip", "coalesce", "queue", "allow"]), "skip"),
  max_queue: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(10_000)), 10),
});

export const JobInput = v.strictObject({
  id: v.optional(JobId),
  schedule: ScheduleSchema,
  target: TargetSchema,
  retry: v.optional(RetrySchema, {}),
  misfire: v.optional(MisfireSchema, {}),
  concurrency: v.optional(ConcurrencySchema, {}),
  priority: v.optional(v.picklist(["high", "normal", "low"]), "normal"),
  metadata: v.optional(v.pipe(v.record(v.string(), v.unknown()), jsonSize(LIMITS.metadataBytes, "metadata")), {}),
});

export type JobInputOutput = v.InferOutput<typeof JobInput>;

/** A validated input as a complete spec; the server picks the id when none was given. */
export function toJobSpec(input: JobInputOutput, id?: string): JobSpec {
  return { ...input, id: id ?? input.id ?? newJobId(), schedule: input.schedule as Schedule } as JobSpec;
}

export const BatchInput = v.strictObject({
  jobs: v.pipe(
    v.array(v.unknown()),
    v.minLength(1, "must hold at least one job"),
    v.maxLength(LIMITS.batchJobs, `must hold at most ${LIMITS.batchJobs} jobs`),
  ),
});

/** PATCH bodies: any subset of a job's fields (the id cannot change). */
export const PatchInput = v.strictObject({
  schedule: v.optional(v.unknown()),
  target: v.optional(v.record(v.string(), v.unknown())),
  retry: v.optional(v.record(v.string(), v.unknown())),
  misfire: v.optional(v.record(v.string(), v.unknown())),
  concurrency: v.optional(v.record(v.string(), v.unknown())),
  priority: v.optional(v.unknown()),
  metadata: v.optional(v.unknown()),
});

const intParam = (min: number, max: number, fallback: number) =>
  v.optional(
    v.pipe(v.string(), v.regex(/^\d{1,9}$/, "must be a whole number"), v.transform(Number), v.minValue(min), v.maxValue(max)),
    String(fallback),
  );

export const PageQuery = v.object({
  limit: intParam(1, LIMITS.pageSize, 100),
  cursor: v.optional(v.pipe(v.string(), v.maxLength(512))),
});

export const FiringListQuery = v.object({
  ...PageQuery.entries,
  state: v.optional(v.picklist(["SCHEDULED", "CLAIMED", "RUNNING", "RETRYING", "DONE", "DEAD", "CANCELLED", "SKIPPED"])),
});

export const PreviewQuery = v.pipe(
  v.object({
    cron: v.optional(v.string()),
    timezone: v.optional(v.string()),
    every: v.optional(v.string()),
    at: v.optional(v.string()),
    dst_gap: v.optional(v.string()),
    dst_overlap: v.optional(v.string()),
    start_at: v.optional(v.string()),
    end_at: v.optional(v.string()),
    from: v.optional(Instant),
    count: intParam(1, LIMITS.previewCount, 10),
  }),
);
