// One delivery attempt of one firing: build the request, send it with a timeout and an abort
// handle, and turn the answer into the firing's next state. Outcomes are written through a
// batching writer so a spike of completions costs one transaction per few milliseconds, not
// one per firing.

import { parseRetryAfterMs, retryDelayMs } from "./backoff.ts";
import type { Clock } from "./clock.ts";
import type { Firing, JobSpec } from "./model.ts";
import type { FiringOutcome, FiringStore } from "./ports.ts";
import { buildWebhookRequest, judge, RefusedTargetError, type WebhookSender } from "./webhook.ts";

export interface AttemptContext {
  clock: Clock;
  send: WebhookSender;
  signingSecret: string | null;
  random: () => number;
}

/** Why an in-flight request was aborted: a user's cancel ends the firing; shutdown does not. */
export type AbortReason = "cancelled" | "timeout";

/** Sends `firing` (already RUNNING, `attempts` counting this one) and decides its outcome. */
export async function attempt(ctx: AttemptContext, spec: JobSpec, firing: Firing, controller: AbortController): Promise<FiringOutcome> {
  const req = buildWebhookRequest(spec, firing, firing.attempts, ctx.clock.now(), ctx.signingSecret);
  const cancelTimeout = ctx.clock.setTimer(spec.target.timeout_ms, () => controller.abort("timeout" satisfies AbortReason));
  let error: string;
  let retryAfterMs: number | undefined;
  try {
    const res = await ctx.send(req, controller.signal);
    const verdict = judge(res.status);
    if (verdict === "success") return { id: firing.id, state: "DONE" };
    error = `HTTP ${res.status}`;
    if (verdict === "fail") return { id: firing.id, state: "DEAD", error };
    retryAfterMs = parseRetryAfterMs(res.retryAfter, ctx.clock.now());
  } catch (err) {
    if (err instanceof RefusedTargetError) return { id: firing.id, state: "DEAD", error: err.message };
    const reason = controller.signal.aborted ? (controller.signal.reason as AbortReason) : null;
    if (reason === "cancelled") return { id: firing.id, state: "CANCELLED", error: "cancelled while running" };
    error = reason === "timeout" ? `timeout after ${spec.target.timeout_ms} ms` : `network error: ${errorText(err)}`;
  } finally {
    cancelTimeout();
  }
  if (firing.attempts >= spec.retry.max_attempts) {
    return { id: firing.id, state: "DEAD", error: `${error} (attempt ${firing.attempts} of ${spec.retry.max_attempts})` };
  }
  const delay = retryDelayMs(firing.attempts, spec.retry, ctx.random, retryAfterMs);
  return { id: firing.id, state: "RETRYING", nextAttemptAt: ctx.clock.now() + delay, error };
}

function errorText(err: unknown): string {
  if (err instanceof Error) return (err as Error & { code?: string }).code ?? err.message;
  return String(err);
}

/** Coalesces outcome writes: everything pushed within `flushMs` goes in one batch. */
export class OutcomeWriter {
  private pending: { outcome: FiringOutcome; resolve: (moved: boolean) => void; reject: (e: unknown) => void }[] = [];
  private cancelTimer: (() => void) | null = null;

  constructor(
    private readonly store: FiringStore,
    private readonly nodeId: string,
    private readonly clock: Clock,
    private readonly flushMs = 10,
    private readonly maxBatch = 500,
  ) {}

  /** Resolves true when the CAS moved the firing (false: it was cancelled or reclaimed meanwhile). */
  write(outcome: FiringOutcome): Promise<boolean> {
    return new Promise((resolve, reject) => {
      this.pending.push({ outcome, resolve, reject });
      if (this.pending.length >= this.maxBatch) void this.flush();
      else this.cancelTimer ??= this.clock.setTimer(this.flushMs, () => void this.flush());
    });
  }

  async flush(): Promise<void> {
    this.cancelTimer?.();
    this.cancelTimer = null;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return;
    try {
      const moved = await this.store.finish(this.nodeId, batch.map((p) => p.outcome), this.clock.now());
      for (const p of batch) p.resolve(moved.has(p.outcome.id));
    } catch (err) {
      for (const p of batch) p.reject(err);
    }
  }
}
