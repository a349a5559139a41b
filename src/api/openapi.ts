// GET /openapi.json: an OpenAPI 3.1 description of SPEC's API. Every request body and query
// parameter schema is generated from the valibot schemas in schemas.ts by @valibot/to-json-schema,
// so the document cannot drift from what the handlers accept. What JSON Schema cannot say (the
// lazy schedule variant choice, custom checks, transforms) is handled here in the converter's own
// hooks, and the server-side checks it could not express are named in the schema descriptions.
// Response bodies are described loosely, from the fields present.ts returns.

import {
  toJsonSchema,
  toJsonSchemaDefs,
  type ConversionConfig,
  type JsonSchema,
  type OverrideActionContext,
  type OverrideSchemaContext,
} from "@valibot/to-json-schema";
import type * as v from "valibot";
import pkg from "../../package.json" with { type: "json" };
import {
  AtSchedule,
  BatchInput,
  CronSchedule,
  EverySchedule,
  FiringListQuery,
  JobId,
  JobInput,
  LIMITS,
  PageQuery,
  PatchInput,
  PreviewQuery,
  ScheduleSchema,
} from "./schemas.ts";

type AnySchema = v.BaseSchema<unknown, unknown, v.BaseIssue<unknown>>;

const SCHEMAS = "#/components/schemas/";
const ref = (name: string): JsonSchema => ({ $ref: SCHEMAS + name });

// ScheduleSchema is pipe(lazy(pick a variant by key), rawCheck(validateSchedule)). The converter
// unwraps a lazy schema by calling its getter with `undefined`, which yields the "no schedule"
// custom schema (it accepts nothing); what the getter really chooses between are the three variants.
const scheduleLazy = ScheduleSchema.pipe[0];
const noSchedule = scheduleLazy.getter(undefined) as AnySchema;

/** The named schemas of components.schemas; a schema met again elsewhere becomes a $ref to its name. */
const NAMED: Record<string, AnySchema> = {
  JobId,
  Schedule: ScheduleSchema,
  AtSchedule,
  CronSchedule,
  EverySchedule,
  Target: JobInput.entries.target,
  Retry: JobInput.entries.retry.wrapped,
  Misfire: JobInput.entries.misfire.wrapped,
  Concurrency: JobInput.entries.concurrency.wrapped,
  JobInput,
  BatchInput,
  PatchInput,
};

function describe(schema: JsonSchema, note: string): JsonSchema {
  return { ...schema, description: schema.description ? `${schema.description}; ${note}` : note };
}

/** Actions JSON Schema has no keyword for: kept as a note in the description instead of failing. */
function overrideAction({ valibotAction, jsonSchema }: OverrideActionContext): JsonSchema | null {
  const action = valibotAction as { type: string; message?: unknown };
  switch (action.type) {
    case "check":
      return describe(jsonSchema, `server-side check: ${typeof action.message === "string" ? action.message : "custom"}`);
    case "raw_check":
      return describe(jsonSchema, "server-side check: the value as a whole is checked further");
    case "to_upper_case":
      return describe(jsonSchema, "case-insensitive (the server upper-cases it before checking)");
    default:
      return null; // converted by the library, or an error: new unsupported actions should be noticed
  }
}

function overrideSchema(ctx: OverrideSchemaContext): JsonSchema | null {
  if (ctx.valibotSchema === noSchedule) return { not: {} };
  if (ctx.valibotSchema === scheduleLazy) {
    // Drop the definition the converter made for the getter's fallback; the variants replace it.
    const fallbackId = ctx.referenceMap.get(noSchedule);
    if (fallbackId !== undefined) {
      delete ctx.definitions[fallbackId];
      ctx.referenceMap.delete(noSchedule);
    }
    // The getter picks the variant by its key and each variant is a strict object requiring that
    // key, so exactly one can match: oneOf says the same.
    const variants = [AtSchedule, CronSchedule, EverySchedule].map((s) => ref(ctx.referenceMap.get(s as AnySchema)!));
    return { oneOf: variants };
  }
  return null;
}

const CONVERSION: ConversionConfig = {
  target: "draft-2020-12", // OpenAPI 3.1's schema dialect
  typeMode: "input", // requests are described as sent, before transforms and defaults
  errorMode: "throw",
  overrideAction,
  overrideSchema,
  overrideRef: ({ referenceId }) => SCHEMAS + referenceId,
};

function requestSchemas(): Record<string, JsonSchema> {
  const defs: Record<string, JsonSchema> = toJsonSchemaDefs(NAMED, CONVERSION);
  // The batch handler parses each element of `jobs` with JobInput (all or nothing), so say so.
  const batch = defs.BatchInput!;
  const jobs = batch.properties!.jobs as JsonSchema;
  batch.properties!.jobs = { ...jobs, items: ref("JobInput") };
  // A PATCH body is merged into the stored job and the result must pass JobInput.
  defs.PatchInput = describe(defs.PatchInput!, "merged field by field into the job (the schedule is replaced whole); the result must be a valid JobInput");
  return defs;
}

interface Parameter {
  name: string;
  in: "query" | "path";
  required: boolean;
  description?: string;
  schema: JsonSchema;
}

/**
 * One query parameter for each entry of a valibot object schema. `refine` names, for some
 * parameters, the schema the handler checks them with next (the preview's schedule fields).
 */
function queryParameters(schema: AnySchema, refine: Record<string, JsonSchema> = {}): Parameter[] {
  const json = toJsonSchema(schema, CONVERSION);
  const required = new Set(json.required ?? []);
  return Object.entries(json.properties ?? {}).map(([name, s]) => {
    const { description, ...rest } = (refine[name] ?? s) as JsonSchema;
    return { name, in: "query" as const, required: required.has(name), ...(description ? { description } : {}), schema: rest };
  });
}

/** The preview handler gathers its schedule fields into an object and parses it with ScheduleSchema. */
function scheduleFields(defs: Record<string, JsonSchema>): Record<string, JsonSchema> {
  const fields: Record<string, JsonSchema> = {};
  for (const variant of ["AtSchedule", "CronSchedule", "EverySchedule"]) {
    for (const [name, s] of Object.entries(defs[variant]!.properties ?? {})) fields[name] ??= s as JsonSchema;
  }
  return fields;
}

const jobIdPath: Parameter = { name: "id", in: "path", required: true, schema: ref("JobId") };
const firingIdPath: Parameter = { name: "id", in: "path", required: true, schema: { type: "string" } };

const instant = { type: "string", format: "date-time" } as const;
const nullableInstant = { type: ["string", "null"], format: "date-time" } as JsonSchema;

function responseSchemas(defs: Record<string, JsonSchema>): Record<string, JsonSchema> {
  const states = FiringListQuery.entries.state.wrapped.options;
  const jobFields = (defs.JobInput!.properties ?? {}) as Record<string, JsonSchema>;
  const page = (item: string): JsonSchema => ({
    type: "object",
    required: ["items", "next_cursor"],
    properties: { items: { type: "array", items: ref(item) }, next_cursor: { type: ["string", "null"] } },
  });
  return {
    Job: {
      type: "object",
      description: "A job as stored: its definition with every default applied, and its state",
      required: ["id", "schedule", "target", "retry", "misfire", "concurrency", "priority", "metadata", "paused", "next_fire_at", "last_fired_at"],
      properties: {
        ...jobFields,
        id: ref("JobId"),
        paused: { type: "boolean" },
        next_fire_at: nullableInstant,
        last_fired_at: { ...nullableInstant, description: "the scheduled instant of the latest firing enqueued" },
        created_at: instant,
        updated_at: instant,
      },
    },
    JobWithBacklog: {
      allOf: [ref("Job"), { type: "object", properties: { backlog: { type: "integer", description: "scheduled minus completed firings" } } }],
    },
    JobPage: page("Job"),
    Firing: {
      type: "object",
      required: ["id", "job_id", "scheduled_at", "state", "attempts", "catchup", "epoch", "last_error", "created_at", "updated_at"],
      properties: {
        id: { type: "string" },
        job_id: ref("JobId"),
        scheduled_at: instant,
        state: { type: "string", enum: [...states] },
        attempts: { type: "integer" },
        catchup: { type: "boolean" },
        manual: { type: "boolean" },
        epoch: { type: "integer", description: "of the leader that enqueued it" },
        last_error: { type: ["string", "null"] },
        next_attempt_at: nullableInstant,
        cancel_requested: { type: "boolean" },
        owner: { type: ["string", "null"] },
        delivered_by: { type: ["string", "null"] },
        waiting: { type: "boolean" },
        created_at: { ...instant, description: "when it was enqueued" },
        updated_at: instant,
      },
    },
    FiringPage: page("Firing"),
    CancelOutcome: {
      type: "object",
      required: ["outcome"],
      properties: { outcome: { type: "string", enum: ["cancel-completed", "cancel-accepted"] } },
    },
    BatchCreated: {
      type: "object",
      required: ["ids"],
      properties: { ids: { type: "array", items: ref("JobId") } },
    },
    Preview: {
      type: "object",
      required: ["times"],
      properties: { times: { type: "array", items: instant } },
    },
    Cluster: {
      type: "object",
      required: ["leader", "epoch", "lease_expires_at", "nodes"],
      properties: {
        leader: { type: ["string", "null"], description: "the node id holding the lease, null when none does" },
        epoch: { type: "integer" },
        lease_expires_at: instant,
        nodes: {
          type: "array",
          items: {
            type: "object",
            required: ["id", "address", "last_seen_at", "alive"],
            properties: { id: { type: "string" }, address: { type: "string" }, last_seen_at: instant, alive: { type: "boolean" } },
          },
        },
      },
    },
    Health: {
      type: "object",
      required: ["status", "node_id", "leader"],
      properties: { status: { const: "ok" }, node_id: { type: "string" }, leader: { type: "boolean" } },
    },
    Error: {
      type: "object",
      required: ["error"],
      properties: {
        error: {
          type: "object",
          required: ["code", "message", "issues"],
          properties: {
            code: { type: "string", examples: ["invalid_request", "invalid_json", "unauthorized", "not_found", "conflict", "payload_too_large", "internal"] },
            message: { type: "string" },
            issues: {
              type: "array",
              items: {
                type: "object",
                required: ["path", "message"],
                properties: {
                  path: { type: "string", description: "dot path of the offending field, e.g. target.timeout_ms" },
                  message: { type: "string" },
                },
              },
            },
          },
        },
      },
    },
  };
}

const json = (schema: JsonSchema) => ({ "application/json": { schema } });
const ok = (description: string, schema: JsonSchema) => ({ description, content: json(schema) });
const body = (name: string) => ({ required: true, content: json(ref(name)) });
const err = (name: string) => ({ $ref: `#/components/responses/${name}` });

const ERROR_RESPONSES = {
  BadRequest: "invalid JSON, or a request that fails validation; `issues` lists every problem",
  Unauthorized: "a bearer token is configured and the request lacks it",
  NotFound: "no such job or firing",
  Conflict: "the request conflicts with the current state",
  PayloadTooLarge: "the request body is too large",
} as const;

type ErrorName = keyof typeof ERROR_RESPONSES;
const statusOf: Record<ErrorName, string> = { BadRequest: "400", Unauthorized: "401", NotFound: "404", Conflict: "409", PayloadTooLarge: "413" };
const errors = (...names: ErrorName[]) => Object.fromEntries(names.map((n) => [statusOf[n], err(n)]));

function paths(defs: Record<string, JsonSchema>) {
  const page = queryParameters(PageQuery);
  return {
    "/v1/jobs": {
      post: {
        operationId: "createJob",
        summary: "Create a job; the server picks the id unless `id` is given",
        requestBody: body("JobInput"),
        responses: { "201": ok("the job", ref("Job")), ...errors("BadRequest", "Unauthorized", "Conflict", "PayloadTooLarge") },
      },
      get: {
        operationId: "listJobs",
        summary: "Keyset-paginated list of jobs; next_cursor is null once none remain",
        parameters: page,
        responses: { "200": ok("a page of jobs", ref("JobPage")), ...errors("BadRequest", "Unauthorized") },
      },
    },
    "/v1/jobs/batch": {
      post: {
        operationId: "createJobs",
        summary: `Create up to ${LIMITS.batchJobs} jobs, all or nothing`,
        requestBody: body("BatchInput"),
        responses: { "201": ok("the new jobs' ids, in order", ref("BatchCreated")), ...errors("BadRequest", "Unauthorized", "Conflict", "PayloadTooLarge") },
      },
    },
    "/v1/jobs/{id}": {
      parameters: [jobIdPath],
      get: {
        operationId: "getJob",
        summary: "One job, with next_fire_at, last_fired_at, paused and backlog",
        responses: { "200": ok("the job", ref("JobWithBacklog")), ...errors("BadRequest", "Unauthorized", "NotFound") },
      },
      put: {
        operationId: "putJob",
        summary: "Create or replace a job (idempotent); a body id must equal the path's",
        requestBody: body("JobInput"),
        responses: {
          "200": ok("the job, replaced", ref("Job")),
          "201": ok("the job, created", ref("Job")),
          ...errors("BadRequest", "Unauthorized", "Conflict", "PayloadTooLarge"),
        },
      },
      patch: {
        operationId: "patchJob",
        summary: "Change fields; schedule changes take effect from now",
        requestBody: body("PatchInput"),
        responses: { "200": ok("the job", ref("Job")), ...errors("BadRequest", "Unauthorized", "NotFound", "Conflict", "PayloadTooLarge") },
      },
      delete: {
        operationId: "deleteJob",
        summary: "Delete a job; no firing after this returns",
        responses: { "204": { description: "deleted" }, ...errors("BadRequest", "Unauthorized", "NotFound") },
      },
    },
    "/v1/jobs/{id}/pause": {
      parameters: [jobIdPath],
      post: {
        operationId: "pauseJob",
        summary: "Pause a job; paused time is not a misfire",
        responses: { "200": ok("the job", ref("Job")), ...errors("BadRequest", "Unauthorized", "NotFound") },
      },
    },
    "/v1/jobs/{id}/resume": {
      parameters: [jobIdPath],
      post: {
        operationId: "resumeJob",
        summary: "Resume a job at its next instant after now",
        responses: { "200": ok("the job", ref("Job")), ...errors("BadRequest", "Unauthorized", "NotFound", "Conflict") },
      },
    },
    "/v1/jobs/{id}/trigger": {
      parameters: [jobIdPath],
      post: {
        operationId: "triggerJob",
        summary: "Fire now, once; obeys the job's concurrency and overlap settings",
        responses: { "202": ok("the firing", ref("Firing")), ...errors("BadRequest", "Unauthorized", "NotFound", "Conflict") },
      },
    },
    "/v1/jobs/{id}/firings": {
      parameters: [jobIdPath],
      get: {
        operationId: "listJobFirings",
        summary: "A job's firings, newest first",
        parameters: page,
        responses: { "200": ok("a page of firings", ref("FiringPage")), ...errors("BadRequest", "Unauthorized", "NotFound") },
      },
    },
    "/v1/firings": {
      get: {
        operationId: "listFirings",
        summary: "Firings across jobs, optionally of one state",
        parameters: queryParameters(FiringListQuery),
        responses: { "200": ok("a page of firings", ref("FiringPage")), ...errors("BadRequest", "Unauthorized") },
      },
    },
    "/v1/firings/{id}": {
      parameters: [firingIdPath],
      get: {
        operationId: "getFiring",
        summary: "One firing",
        responses: { "200": ok("the firing", ref("Firing")), ...errors("Unauthorized", "NotFound") },
      },
    },
    "/v1/firings/{id}/cancel": {
      parameters: [firingIdPath],
      post: {
        operationId: "cancelFiring",
        summary: "Cancel a firing",
        responses: {
          "200": ok("it had not started and is now CANCELLED", ref("CancelOutcome")),
          "202": ok("it is running: the request is aborted, it is not retried, and it becomes CANCELLED", ref("CancelOutcome")),
          ...errors("Unauthorized", "NotFound", "Conflict"),
        },
      },
    },
    "/v1/firings/{id}/retry": {
      parameters: [firingIdPath],
      post: {
        operationId: "retryFiring",
        summary: "Re-drive a DEAD firing",
        responses: { "202": ok("the firing, scheduled again", ref("Firing")), ...errors("Unauthorized", "NotFound", "Conflict") },
      },
    },
    "/v1/preview": {
      get: {
        operationId: "previewSchedule",
        summary: "The next `count` firing instants after `from` of a schedule given as query parameters (exactly one of cron, every, at)",
        parameters: queryParameters(PreviewQuery, scheduleFields(defs)),
        responses: { "200": ok("the instants", ref("Preview")), ...errors("BadRequest", "Unauthorized") },
      },
    },
    "/v1/cluster": {
      get: {
        operationId: "getCluster",
        summary: "The leader, epoch and members as this node sees them",
        responses: { "200": ok("the cluster", ref("Cluster")), ...errors("Unauthorized") },
      },
    },
    "/": {
      get: {
        operationId: "statusPage",
        summary: "HTML status page: leader, nodes, backlog, lateness, recent and failing firings, jobs due next",
        description: "With a token configured, a browser signs in at POST /login and is then admitted by a session cookie (reads only).",
        responses: {
          "200": { description: "the status page", content: { "text/html": { schema: { type: "string" } } } },
          "401": { description: "the sign-in page", content: { "text/html": { schema: { type: "string" } } } },
        },
      },
    },
    "/healthz": {
      get: {
        operationId: "health",
        summary: "Liveness of this node",
        security: [],
        responses: { "200": ok("this node is up", ref("Health")) },
      },
    },
    "/metrics": {
      get: {
        operationId: "metrics",
        summary: "Prometheus metrics: firings by outcome, lateness, backlog, leader and epoch, delivery latency",
        responses: {
          "200": { description: "Prometheus text exposition format", content: { "text/plain": { schema: { type: "string" } } } },
          ...errors("Unauthorized"),
        },
      },
    },
    "/openapi.json": {
      get: {
        operationId: "openapi",
        summary: "This document",
        security: [],
        responses: { "200": ok("the OpenAPI document", { type: "object" }) },
      },
    },
  };
}

export function buildOpenApiDocument() {
  const requests = requestSchemas();
  return {
    openapi: "3.1.0",
    jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
    info: {
      title: "cronwheel",
      version: pkg.version,
      description: "Distributed, self-hosted scheduler for HTTP webhooks. Request schemas are generated from the server's own validation schemas.",
    },
    security: [{ bearer: [] }],
    paths: paths(requests),
    components: {
      schemas: { ...requests, ...responseSchemas(requests) },
      responses: Object.fromEntries(
        Object.entries(ERROR_RESPONSES).map(([name, description]) => [name, ok(description, ref("Error"))]),
      ),
      securitySchemes: {
        bearer: {
          type: "http",
          scheme: "bearer",
          description: "Required on /v1 and /metrics when the server is started with a token",
        },
      },
    },
  };
}

let cached: ReturnType<typeof buildOpenApiDocument> | null = null;

/** The document, built on first use (the schemas do not change while the process runs). */
export function openApiDocument() {
  cached ??= buildOpenApiDocument();
  return cached;
}
