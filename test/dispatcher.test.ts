// Leader, planner and dispatcher together in virtual time on a real libSQL file: a one-shot is
// sent exactly at its instant, and retries follow the backoff policy to the millisecond.

import { afterEach, expect, test } from "bun:test";
import { VirtualClock } from "../src/core/clock.ts";
import { DEFAULT_DISPATCHER_OPTIONS, Dispatcher } from "../src/core/dispatcher.ts";
import { Leader } from "../src/core/leader.ts";
import { silentLogger } from "../src/core/log.ts";
import type { Job } from "../src/core/model.ts";
import { DEFAULT_PLANNER_OPTIONS, Planner } from "../src/core/planner.ts";
import type { Store } from "../src/core/ports.ts";
import type { WebhookSender } from "../src/core/webhook.ts";
import { openStore } from "../src/store/index.ts";
import { testJob } from "./helpers/fixtures.ts";
import { tempDbUrl } from "./helpers/node.ts";

let cleanup: (() => Promise<void>) | null = null;
afterEach(async () => {
  await cleanup?.();
  cleanup = null;
});

async function harness(replies: number[]) {
  const clock = new VirtualClock(Math.floor(Date.now() / 1000) * 1000);
  // On this thread: virtual time needs each store call done within the step's microtasks.
  const store: Store = await openStore(tempDbUrl(), { sameThread: true });
  const sent: { at: number; attempt: number }[] = [];
  const send: WebhookSender = async (req) => {
    sent.push({ at: clock.now(), attempt: Number(req.headers["Cronwheel-Attempt"]) });
    return { status: replies.shift() ?? 200, retryAfter: null };
  };
  await store.nodes.heartbeat("n", "http://n"); // claims and slots hold while this is fresh
  const leader = new Leader(store.lease, clock, { nodeId: "n", leaseMs: 60_000 }, silentLogger);
  await leader.tick();
  const dispatcher = new Dispatcher(store, clock, send, () => ["n"], { ...DEFAULT_DISPATCHER_OPTIONS, nodeId: "n", signingSecret: null }, silentLogger, {}, () => 0.5);
  const planner = new Planner(store, leader, clock, DEFAULT_PLANNER_OPTIONS, () => dispatcher.poke(), silentLogger, () => "n");
  await dispatcher.start();
  cleanup = async () => {
    await dispatcher.stop(0);
    store.close();
  };
  return { clock, store, sent, leader, planner, dispatcher };
}

function oneShot(at: number): Job {
  return testJob({ id: "shot", schedule: { at: new Date(at).toISOString() } }, { nextFireAt: at, anchorAt: at, createdAt: at, updatedAt: at });
}

/** Advances in 5 ms steps so each awaited store call gets its turn between timers. */
async function run(clock: VirtualClock, ms: number) {
  for (let t = 0; t < ms; t += 5) await clock.advance(5);
}

test("a one-shot is sent at its instant; 500, 503 then 200 retry after 750 and 1500 ms (equal jitter, random 0.5)", async () => {
  const h = await harness([500, 503, 200]);
  const T = h.clock.now() + 3_000;
  await h.store.jobs.insert(oneShot(T));
  expect(await h.planner.planDue(h.leader.current()!)).toBe(1);
  h.dispatcher.poke();
  await run(h.clock, 6_000);
  // base 1000 -> 500 + 0.5 * 500 = 750; base 2000 -> 1000 + 0.5 * 1000 = 1500.
  expect(h.sent).toEqual([
    { at: T, attempt: 1 },
    { at: T + 750, attempt: 2 },
    { at: T + 2_250, attempt: 3 },
  ]);
  const firing = (await h.store.firings.listByJob("shot", 10, null)).items[0]!;
  expect(firing.state).toBe("DONE");
  expect(firing.attempts).toBe(3);
});

test("attempts exhausted: DEAD after the last one, with the error kept", async () => {
  const h = await harness([500, 500, 500, 500]);
  const T = h.clock.now() + 1_000;
  await h.store.jobs.insert(oneShot(T));
  await h.planner.planDue(h.leader.current()!);
  h.dispatcher.poke();
  await run(h.clock, 6_000);
  expect(h.sent.map((s) => s.attempt)).toEqual([1, 2, 3]);
  const firing = (await h.store.firings.listByJob("shot", 10, null)).items[0]!;
  expect(firing.state).toBe("DEAD");
  expect(firing.lastError).toContain("HTTP 500");
});

test("stored firings found past the misfire threshold are not sent stale: recovery applies the policy", async () => {
  const h = await harness([]);
  const now = h.clock.now();
  const fence = h.leader.current()!;
  // Two instants stored by an earlier leader and never attempted, now 2 minutes old.
  const plan = (id: string, policy: "skip" | "fire_once") => {
    const job = testJob({ id, misfire: { policy, max_catchup: 100 }, schedule: { cron: "0 0 1 1 *", timezone: "UTC" } }, { nextFireAt: now + 86_400_000 });
    return { job, entry: { jobId: id, version: 1, nextFireAt: job.nextFireAt, lastFiredAt: null, skipStoredIds: [], catchupStoredIds: [],
      firings: [now - 121_000, now - 120_000].map((at) => ({ id: `f_${id}_${at}`, jobId: id, scheduledAt: at, catchup: false, manual: false, priority: "normal" as const, owner: "n" })) } };
  };
  const skip = plan("old-skip", "skip");
  const once = plan("old-once", "fire_once");
  await h.store.jobs.insert(skip.job);
  await h.store.jobs.insert(once.job);
  await h.store.firings.applyPlan(fence, [skip.entry, once.entry], now);
  h.dispatcher.poke();
  await run(h.clock, 200); // the dispatcher sees them first: it must not send them
  expect(h.sent).toEqual([]);
  await h.planner.recoverStored(fence);
  h.dispatcher.poke();
  await run(h.clock, 500);
  const states = async (id: string) => (await h.store.firings.listByJob(id, 10, null)).items.map((f) => [f.scheduledAt - now, f.state, f.catchup]);
  expect(await states("old-skip")).toEqual([[-120_000, "SKIPPED", false], [-121_000, "SKIPPED", false]]);
  expect(await states("old-once")).toEqual([[-120_000, "DONE", true], [-121_000, "SKIPPED", false]]);
  expect(h.sent).toHaveLength(1);
});
