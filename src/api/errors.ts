// The SPEC error shape and the one place that maps failures to it. Expected failures (bad
// input, not found, conflict) are 4xx; anything else is a 500 that is logged, and the server
// keeps serving.

import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import * as v from "valibot";
import type { Logger } from "../core/log.ts";
import { ConflictError, NotFoundError } from "../core/service.ts";
import { InvalidCursorError } from "../store/index.ts";

export interface IssueOut {
  path: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: ContentfulStatusCode,
    readonly code: string,
    message: string,
    readonly issues: IssueOut[] = [],
  ) {
    super(message);
  }
}

export function issuesOf(issues: v.BaseIssue<unknown>[], prefix = ""): IssueOut[] {
  return issues.map((issue) => {
    const path = v.getDotPath(issue);
    const full = [prefix, path].filter(Boolean).join(".");
    // valibot reports an unknown key of a strict object as "expected never".
    const unknownKey = issue.type === "strict_object" && issue.expected === "never";
    return { path: full, message: unknownKey ? "is not a known field" : issue.message };
  });
}

/** Parses `input` with `schema` or throws a 400 listing every issue. */
export function parseOr400<S extends v.GenericSchema>(schema: S, input: unknown, prefix = ""): v.InferOutput<S> {
  const result = v.safeParse(schema, input);
  if (!result.success) {
    throw new ApiError(400, "invalid_request", "the request is not valid", issuesOf(result.issues, prefix));
  }
  return result.output;
}

export function errorBody(code: string, message: string, issues: IssueOut[] = []) {
  return { error: { code, message, issues } };
}

export function toErrorResponse(err: unknown, c: Context, log: Logger): Response {
  if (err instanceof ApiError) return c.json(errorBody(err.code, err.message, err.issues), err.status);
  if (err instanceof NotFoundError) return c.json(errorBody("not_found", err.message), 404);
  if (err instanceof ConflictError) return c.json(errorBody("conflict", err.message), 409);
  if (err instanceof InvalidCursorError) return c.json(errorBody("invalid_request", err.message, [{ path: "cursor", message: err.message }]), 400);
  log.error("request failed", { method: c.req.method, path: c.req.path, err: err instanceof Error ? err.stack ?? err.message : String(err) });
  return c.json(errorBody("internal", "internal error; the request may be retried"), 500);
}
