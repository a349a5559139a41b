// The HTTP API of SPEC on Hono: thin handlers that validate with valibot, call the scheduler
// service, and shape JSON. Errors of every kind leave through toErrorResponse.

import { createHash, createHmac, timingSafeEqual } from "node:crypto";
import { Hono, type Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { getCookie, setCookie } from "hono/cookie";
import * as v from "valibot";
import type { Logger } from "../core/log.ts";
import type { JobSpec, Schedule } from "../core/model.ts";
import { parseInstantMs } from "../core/schedule.ts";
import type { SchedulerService, StatusSnapshot } from "../core/service.ts";
import { renderLoginPage, renderStatusPage } from "./status-page.ts";
import { ApiError, errorBody, issuesOf, parseOr400, toErrorResponse } from "./errors.ts";
import { openApiDocument } from "./openapi.ts";
import { presentFiring, presentJob } from "./present.ts";
import {
  BatchInput,
  FiringListQuery,
  JobId,
  JobInput,
  PageQuery,
  PatchInput,
  PreviewQuery,
  ScheduleSchema,
  toJobSpec,
} from "./schemas.ts";

export interface AppOptions {
  token: string | null;
  nodeId: string;
  log: Logger;
  /** Prometheus text for GET /metrics. */
  metrics: () => Promise<string>;
  /** Recent lateness on this node, for the status page. */
  lateness: () => StatusSnapshot["lateness"];
}

const BODY_LIMIT_BYTES = 256 * 1024;
const BATCH_BODY_LIMIT_BYTES = 32 * 1024 * 1024;

const digest = (s: string) => createHash("sha256").update(s).digest();
const SESSION_COOKIE = "cronwheel_session";
const SESSION_MS = 12 * 3_600_000;

/** Compares digests in constant time, so neither content nor length leaks through timing. */
function safeEqual(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected));
}

async function jsonBody(c: Context): Promise<unknown> {
  const text = await c.req.text();
  if (text.trim() === "") throw new ApiError(400, "invalid_json", "the request body must be a JSON object");
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new ApiError(400, "invalid_json", `the request body is not valid JSON: ${(err as Error).message}`);
  }
}

function jobIdParam(c: Context): string {
  return parseOr400(JobId, c.req.param("id"), "id");
}

export function createApp(service: SchedulerService, opts: AppOptions): Hono {
  const app = new Hono();
  const tooLarge = (c: Context) => c.json(errorBody("payload_too_large", "the request body is too large"), 413);

  app.onError((err, c) => toErrorResponse(err, c, opts.log));
  app.notFound((c) => c.json(errorBody("not_found", `no route for ${c.req.method} ${c.req.path}`), 404));

  app.get("/healthz", (c) => c.json({ status: "ok", node_id: opts.nodeId, leader: service.isLeader() }));
  app.get("/openapi.json", (c) => c.json(openApiDocument()));

  // The status page signs in once and keeps a cookie: an expiry and an HMAC of it keyed by the
  // token, never the token. It lapses after SESSION_MS and is accepted for reads only (GET/HEAD),
  // so a cross-site form cannot write with it.
  const sessionFor = (expiresAt: number) => `${expiresAt}.${createHmac("sha256", opts.token ?? "").update(`cronwheel status page ${expiresAt}`).digest("hex")}`;
  const hasSession = (c: Context) => {
    if (opts.token === null || !["GET", "HEAD"].includes(c.req.method)) return false;
    const value = getCookie(c, SESSION_COOKIE) ?? "";
    const expiresAt = Number(value.split(".")[0]);
    return Number.isSafeInteger(expiresAt) && expiresAt > Date.now() && safeEqual(value, sessionFor(expiresAt));
  };
  const hasToken = (c: Context) => {
    const header = c.req.header("authorization") ?? "";
    return opts.token !== null && header.startsWith("Bearer ") && safeEqual(header.slice(7), opts.token);
  };

  if (opts.token !== null) {
    const requireToken = async (c: Context, next: () => Promise<void>) => {
      if (!hasToken(c) && !hasSession(c)) {
        c.header("WWW-Authenticate", 'Bearer realm="cronwheel"');
        return c.json(errorBody("unauthorized", "a valid bearer token is required"), 401);
      }
      await next();
    };
    app.use("/v1/*", requireToken);
    app.use("/internal/*", requireToken);
    app.use("/metrics", requireToken);
  }

  app.get("/", async (c) => {
    if (opts.token !== null && !hasToken(c) && !hasSession(c)) return c.html(renderLoginPage(false), 401);
    return c.html(renderStatusPage(await service.status(opts.nodeId, opts.lateness())));
  });

  app.post("/login", bodyLimit({ maxSize: 4096, onError: tooLarge }), async (c) => {
    if (opts.token === null) return c.redirect("/", 303);
    const form = await c.req.parseBody().catch(() => ({}) as Record<string, unknown>);
    const given = typeof form.token === "string" ? form.token : "";
    if (!safeEqual(given, opts.token)) return c.html(renderLoginPage(true), 401);
    const expiresAt = Date.now() + SESSION_MS;
    setCookie(c, SESSION_COOKIE, sessionFor(expiresAt), {
      httpOnly: true,
      sameSite: "Strict",
      path: "/",
      maxAge: SESSION_MS / 1000,
      secure: new URL(c.req.url).protocol === "https:",
    });
    return c.redirect("/", 303);
  });

  // Registered after the token check: Hono runs handlers and middleware in registration order.
  app.get("/metrics", async (c) => c.text(await opts.metrics(), 200, { "Content-Type": "text/plain; version=0.0.4; charset=utf-8" }));

  app.post("/v1/jobs/batch", bodyLimit({ maxSize: BATCH_BODY_LIMIT_BYTES, onError: tooLarge }), async (c) => {
    const { jobs } = parseOr400(BatchInput, await jsonBody(c));
    const specs: JobSpec[] = [];
    const issues = [];
    for (const [i, raw] of jobs.entries()) {
      const r = v.safeParse(JobInput, raw);
      if (r.success) specs.push(toJobSpec(r.output));
      else issues.push(...issuesOf(r.issues, `jobs.${i}`));
    }
    if (issues.length > 0) throw new ApiError(400, "invalid_request", "some jobs are not valid; none were created", issues.slice(0, 100));
    return c.json({ ids: await service.createMany(specs) }, 201);
  });

  app.use("/v1/*", bodyLimit({ maxSize: BODY_LIMIT_BYTES, onError: tooLarge }));

  app.get("/v1/cluster", async (c) => {
    const s = await service.clusterStatus();
    const iso = (ms: number) => new Date(ms).toISOString();
    return c.json({
      leader: s.leader,
      epoch: s.epoch,
      lease_expires_at: iso(s.leaseExpiresAt),
      nodes: s.nodes.map((n) => ({ id: n.id, address: n.address, last_seen_at: iso(n.lastSeenAt), alive: n.alive })),
    });
  });

  // Between nodes: the leader tells a firing's owner to claim it now.
  app.post("/internal/v1/poke", (c) => {
    service.poke();
    return c.body(null, 204);
  });

  app.post("/v1/jobs", async (c) => {
    const spec = toJobSpec(parseOr400(JobInput, await jsonBody(c)));
    return c.json(presentJob(await service.create(spec)), 201);
  });

  app.put("/v1/jobs/:id", async (c) => {
    const id = jobIdParam(c);
    const input = parseOr400(JobInput, await jsonBody(c));
    if (input.id !== undefined && input.id !== id) {
      throw new ApiError(400, "invalid_request", "the body's id differs from the URL's", [{ path: "id", message: `must be "${id}" or absent` }]);
    }
    const { job, created } = await service.put(toJobSpec(input, id));
    return c.json(presentJob(job), created ? 201 : 200);
  });

  app.get("/v1/jobs", async (c) => {
    const q = parseOr400(PageQuery, c.req.query());
    const page = await service.list(q.limit, q.cursor ?? null);
    return c.json({ items: page.items.map(presentJob), next_cursor: page.nextCursor });
  });

  app.get("/v1/jobs/:id", async (c) => {
    const job = await service.require(jobIdParam(c));
    return c.json({ ...presentJob(job), backlog: await service.backlog(job.spec.id) });
  });

  app.patch("/v1/jobs/:id", async (c) => {
    const id = jobIdParam(c);
    const patch = parseOr400(PatchInput, await jsonBody(c));
    const current = await service.require(id);
    // Nested objects merge field by field; the schedule is replaced whole (its variants differ).
    const s = current.spec;
    const merged = {
      ...s,
      ...patch,
      target: { ...s.target, ...patch.target },
      retry: { ...s.retry, ...patch.retry },
      misfire: { ...s.misfire, ...patch.misfire },
      concurrency: { ...s.concurrency, ...patch.concurrency },
    };
    const spec = toJobSpec(parseOr400(JobInput, merged), id);
    return c.json(presentJob(await service.update(current, spec)));
  });

  app.delete("/v1/jobs/:id", async (c) => {
    await service.delete(jobIdParam(c));
    return c.body(null, 204);
  });

  app.post("/v1/jobs/:id/pause", async (c) => c.json(presentJob(await service.pause(jobIdParam(c)))));
  app.post("/v1/jobs/:id/resume", async (c) => c.json(presentJob(await service.resume(jobIdParam(c)))));
  app.post("/v1/jobs/:id/trigger", async (c) => c.json(presentFiring(await service.trigger(jobIdParam(c))), 202));

  app.get("/v1/jobs/:id/firings", async (c) => {
    const q = parseOr400(PageQuery, c.req.query());
    const page = await service.listJobFirings(jobIdParam(c), q.limit, q.cursor ?? null);
    return c.json({ items: page.items.map(presentFiring), next_cursor: page.nextCursor });
  });

  app.get("/v1/firings", async (c) => {
    const q = parseOr400(FiringListQuery, c.req.query());
    const page = await service.listFirings(q.state ?? null, q.limit, q.cursor ?? null);
    return c.json({ items: page.items.map(presentFiring), next_cursor: page.nextCursor });
  });

  app.get("/v1/firings/:id", async (c) => {
    const firing = await service.getFiring(c.req.param("id"));
    if (!firing) throw new ApiError(404, "not_found", `firing "${c.req.param("id")}" not found`);
    return c.json(presentFiring(firing));
  });

  app.post("/v1/firings/:id/cancel", async (c) => {
    const id = c.req.param("id");
    const result = await service.cancelFiring(id);
    switch (result) {
      case "cancel-completed":
        return c.json({ outcome: result }, 200);
      case "cancel-accepted":
        return c.json({ outcome: result }, 202);
      case "terminal":
        throw new ApiError(409, "conflict", `firing "${id}" has already finished`);
      case "not-found":
        throw new ApiError(404, "not_found", `firing "${id}" not found`);
    }
  });

  app.post("/v1/firings/:id/retry", async (c) => c.json(presentFiring(await service.retryFiring(c.req.param("id"))), 202));

  app.get("/v1/preview", (c) => {
    const q = parseOr400(PreviewQuery, c.req.query());
    const { from, count, ...rest } = q;
    const given = Object.fromEntries(Object.entries(rest).filter(([, value]) => value !== undefined));
    const schedule = parseOr400(ScheduleSchema, given) as Schedule;
    const times = service.preview(schedule, from === undefined ? null : parseInstantMs(from), count);
    return c.json({ times: times.map((t) => new Date(t).toISOString()) });
  });

  return app;
}
