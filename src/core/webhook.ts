// The webhook request of SPEC, built as plain data (no I/O), and how an answer is judged.
// The sender that puts it on the wire is an injected function, so delivery logic is testable.

import { createHmac } from "node:crypto";
import { isRetryableStatus } from "./backoff.ts";
import { idempotencyKey, type Firing, type JobSpec } from "./model.ts";

export interface WebhookRequest {
  url: string;
  method: string;
  headers: Record<string, string>;
  body: string | null;
}

export interface WebhookResponse {
  status: number;
  retryAfter: string | null;
}

/** The target may never be called (a link-local or metadata address): the firing fails at once. */
export class RefusedTargetError extends Error {}

/**
 * Puts a request on the wire; rejects on network errors and when `signal` aborts, and with
 * RefusedTargetError when the target is not allowed.
 */
export type WebhookSender = (req: WebhookRequest, signal: AbortSignal) => Promise<WebhookResponse>;

export type Verdict = "success" | "retry" | "fail";

function hasHeader(headers: Record<string, string>, name: string): boolean {
  const lower = name.toLowerCase();
  return Object.keys(headers).some((h) => h.toLowerCase() === lower);
}

/** Strings are sent as they are; any other JSON value is sent JSON-encoded. */
export function encodeBody(body: unknown): { text: string; contentType: string } | null {
  if (body === undefined) return null;
  if (typeof body === "string") return { text: body, contentType: "text/plain; charset=utf-8" };
  return { text: JSON.stringify(body), contentType: "application/json" };
}

export function sign(secret: string, unixSeconds: number, body: string): string {
  const mac = createHmac("sha256", secret).update(`${unixSeconds}.${body}`).digest("hex");
  return `t=${unixSeconds},v1=${mac}`;
}

export function buildWebhookRequest(
  spec: JobSpec,
  firing: Firing,
  attempt: number,
  nowMs: number,
  signingSecret: string | null,
): WebhookRequest {
  const method = spec.target.method.toUpperCase();
  const encoded = method === "GET" || method === "HEAD" ? null : encodeBody(spec.target.body);
  const headers: Record<string, string> = { ...spec.target.headers };
  if (encoded && !hasHeader(headers, "content-type")) headers["Content-Type"] = encoded.contentType;
  // Ours are set last so a job's own headers cannot forge them.
  headers["Idempotency-Key"] = idempotencyKey(firing.jobId, firing.scheduledAt);
  headers["Cronwheel-Job-Id"] = firing.jobId;
  headers["Cronwheel-Firing-Id"] = firing.id;
  headers["Cronwheel-Attempt"] = String(attempt);
  headers["Cronwheel-Scheduled-At"] = new Date(firing.scheduledAt).toISOString();
  if (signingSecret) headers["Cronwheel-Signature"] = sign(signingSecret, Math.floor(nowMs / 1000), encoded?.text ?? "");
  return { url: spec.target.url, method, headers, body: encoded?.text ?? null };
}

/** SPEC: 2xx succeeds; 408, 429 and 5xx are retried; anything else fails at once. */
export function judge(status: number): Verdict {
  if (status >= 200 && status < 300) return "success";
  return isRetryableStatus(status) ? "retry" : "fail";
}
