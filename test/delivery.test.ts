// End to end on one node: real server, real receiver on 127.0.0.1, the embedded store.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { Receiver } from "./helpers/receiver.ts";
import { startTestNode, type TestNode } from "./helpers/node.ts";

let node: TestNode;
const receiver = new Receiver();

beforeAll(async () => {
  await receiver.start();
  node = await startTestNode(["--signing-secret", "s3cret"]);
});
afterAll(async () => {
  await node.stop(1000);
  receiver.stop();
});

async function waitState(id: string, states: string[], timeoutMs = 10_000) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = await node.api("GET", `/v1/firings/${id}`);
    if (states.includes(r.json?.state)) return r.json;
    if (Date.now() > until) throw new Error(`firing ${id} stayed ${r.json?.state}`);
    await Bun.sleep(50);
  }
}

describe("delivery", () => {
  test("a one-shot fires once, on time, with every header and a valid signature", async () => {
    const at = new Date(Date.now() + 1500);
    at.setMilliseconds(0);
    const atIso = new Date(at.getTime() + 1000).toISOString();
    const created = await node.api("POST", "/v1/jobs", {
      id: "one-shot",
      schedule: { at: atIso },
      target: { url: `${receiver.url}/hook`, headers: { "X-Team": "data" }, body: { hello: "world" } },
    });
    expect(created.status).toBe(201);
    await receiver.waitFor((r) => r.some((x) => x.headers["cronwheel-job-id"] === "one-shot"));
    await Bun.sleep(1500); // a second delivery would show up here
    const got = receiver.forJob("one-shot");
    expect(got).toHaveLength(1);
    const req = got[0]!;
    const scheduledMs = Date.parse(atIso);
    expect(req.method).toBe("POST");
    expect(req.path).toBe("/hook");
    expect(req.body).toBe('{"hello":"world"}');
    expect(req.headers["content-type"]).toBe("application/json");
    expect(req.headers["x-team"]).toBe("data");
    expect(req.headers["idempotency-key"]).toBe(`one-shot:${scheduledMs}`);
    expect(req.headers["cronwheel-attempt"]).toBe("1");
    expect(req.headers["cronwheel-scheduled-at"]).toBe(atIso);
    expect(req.headers["cronwheel-firing-id"]).toMatch(/^f_/);
    const sig = req.headers["cronwheel-signature"]!;
    const m = /^t=(\d+),v1=([0-9a-f]{64})$/.exec(sig);
    expect(m).not.toBeNull();
    const mac = createHmac("sha256", "s3cret").update(`${m![1]}.${req.body}`).digest("hex");
    expect(m![2]).toBe(mac);
    // On time: arrival within 200 ms of the scheduled instant, never before it.
    expect(req.arrivedAt).toBeGreaterThanOrEqual(scheduledMs);
    expect(req.arrivedAt - scheduledMs).toBeLessThan(200);
    const firing = await waitState(req.headers["cronwheel-firing-id"]!, ["DONE"]);
    expect(firing.attempts).toBe(1);
    expect(firing.epoch).toBeGreaterThan(0);
    const job = await node.api("GET", "/v1/jobs/one-shot");
    expect(job.json.last_fired_at).toBe(atIso);
    expect(job.json.next_fire_at).toBeNull();
  });

  test("a 6-field every-second cron fires each second", async () => {
    await node.api("PUT", "/v1/jobs/every-second", {
      schedule: { cron: "* * * * * *", timezone: "Europe/Berlin" },
      target: { url: `${receiver.url}/tick` },
    });
    await receiver.waitFor((r) => r.filter((x) => x.headers["cronwheel-job-id"] === "every-second").length >= 5, 10_000);
    await node.api("DELETE", "/v1/jobs/every-second");
    const got = receiver.forJob("every-second");
    const instants = got.map((r) => Date.parse(r.headers["cronwheel-scheduled-at"]!));
    for (let i = 1; i < instants.length; i++) expect(instants[i]! - instants[i - 1]!).toBe(1000);
    for (const r of got) {
      const s = Date.parse(r.headers["cronwheel-scheduled-at"]!);
      expect(s % 1000).toBe(0);
      expect(r.arrivedAt - s).toBeLessThan(200);
    }
    // Deleting stops it: nothing arrives after the delete returned.
    const count = receiver.forJob("every-second").length;
    await Bun.sleep(1500);
    expect(receiver.forJob("every-second").length).toBe(count);
  });

  test("500, 500, 200 is retried with the same idempotency key and ends DONE", async () => {
    receiver.script("flaky", [{ status: 500 }, { status: 503 }, { status: 200 }]);
    await node.api("PUT", "/v1/jobs/flaky", {
      schedule: { at: new Date(Date.now() + 300).toISOString() },
      target: { url: `${receiver.url}/flaky` },
      retry: { max_attempts: 3, initial_backoff_ms: 100, max_backoff_ms: 200 },
    });
    await receiver.waitFor((r) => r.filter((x) => x.headers["cronwheel-job-id"] === "flaky").length >= 3, 10_000);
    const got = receiver.forJob("flaky");
    expect(got.map((r) => r.headers["cronwheel-attempt"])).toEqual(["1", "2", "3"]);
    expect(new Set(got.map((r) => r.headers["idempotency-key"])).size).toBe(1);
    expect(new Set(got.map((r) => r.headers["cronwheel-firing-id"])).size).toBe(1);
    const firing = await waitState(got[0]!.headers["cronwheel-firing-id"]!, ["DONE"]);
    expect(firing.attempts).toBe(3);
  });

  test("a 400 goes DEAD at once; retry re-drives it", async () => {
    receiver.script("bad-request", [{ status: 400 }, { status: 200 }]);
    await node.api("PUT", "/v1/jobs/bad-request", {
      schedule: { at: new Date(Date.now() + 200).toISOString() },
      target: { url: `${receiver.url}/bad` },
    });
    await receiver.waitFor((r) => r.some((x) => x.headers["cronwheel-job-id"] === "bad-request"));
    const id = receiver.forJob("bad-request")[0]!.headers["cronwheel-firing-id"]!;
    const dead = await waitState(id, ["DEAD"]);
    expect(dead.attempts).toBe(1);
    expect(dead.last_error).toContain("HTTP 400");
    const listed = await node.api("GET", "/v1/firings?state=DEAD");
    expect(listed.json.items.map((f: any) => f.id)).toContain(id);
    const retried = await node.api("POST", `/v1/firings/${id}/retry`);
    expect(retried.status).toBe(202);
    await waitState(id, ["DONE"]);
    expect(receiver.forJob("bad-request")).toHaveLength(2);
    const again = await node.api("POST", `/v1/firings/${id}/retry`);
    expect(again.status).toBe(409);
  });

  test("429 honours Retry-After", async () => {
    receiver.script("throttled", [{ status: 429, headers: { "Retry-After": "1" } }, { status: 200 }]);
    await node.api("PUT", "/v1/jobs/throttled", {
      schedule: { at: new Date(Date.now() + 200).toISOString() },
      target: { url: `${receiver.url}/t` },
      retry: { initial_backoff_ms: 10, max_backoff_ms: 20 },
    });
    await receiver.waitFor((r) => r.filter((x) => x.headers["cronwheel-job-id"] === "throttled").length >= 2, 10_000);
    const [a, b] = receiver.forJob("throttled");
    expect(b!.arrivedAt - a!.arrivedAt).toBeGreaterThanOrEqual(990);
  });

  test("cancel: a queued firing completes at once (200), a running one is aborted (202), a finished one is 409", async () => {
    receiver.script("slow", [{ status: 200, delayMs: 30_000 }]);
    await node.api("PUT", "/v1/jobs/slow", {
      schedule: { cron: "0 0 1 1 *" },
      target: { url: `${receiver.url}/slow`, timeout_ms: 60_000 },
      concurrency: { max: 1, overlap: "queue", max_queue: 5 },
    });
    const running = (await node.api("POST", "/v1/jobs/slow/trigger")).json;
    await receiver.waitFor((r) => r.some((x) => x.headers["cronwheel-firing-id"] === running.id));
    const queued = (await node.api("POST", "/v1/jobs/slow/trigger")).json;
    await waitState(queued.id, ["CLAIMED"]); // waiting behind the cap
    const c1 = await node.api("POST", `/v1/firings/${queued.id}/cancel`);
    expect(c1.status).toBe(200);
    expect(c1.json).toEqual({ outcome: "cancel-completed" });
    expect((await node.api("GET", `/v1/firings/${queued.id}`)).json.state).toBe("CANCELLED");
    const abortedBefore = receiver.aborted;
    const c2 = await node.api("POST", `/v1/firings/${running.id}/cancel`);
    expect(c2.status).toBe(202);
    expect(c2.json).toEqual({ outcome: "cancel-accepted" });
    await receiver.waitFor(() => receiver.aborted > abortedBefore, 3_000);
    const ended = await waitState(running.id, ["CANCELLED"], 3_000);
    expect(ended.attempts).toBe(1);
    await Bun.sleep(1200); // no retry after a cancel
    expect(receiver.forJob("slow").filter((r) => r.headers["cronwheel-firing-id"] === running.id)).toHaveLength(1);
    expect((await node.api("POST", `/v1/firings/${running.id}/cancel`)).status).toBe(409);
  });

  test("an every-second job whose handler takes 2.5 s never has two requests in flight (skip)", async () => {
    receiver.script("overlap", Array.from({ length: 10 }, () => ({ status: 200, delayMs: 2500 })));
    await node.api("PUT", "/v1/jobs/overlap", {
      schedule: { every: "1s" },
      target: { url: `${receiver.url}/o`, timeout_ms: 10_000 },
    });
    await Bun.sleep(6_000);
    await node.api("DELETE", "/v1/jobs/overlap");
    const got = receiver.forJob("overlap");
    expect(got.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < got.length; i++) expect(got[i]!.arrivedAt - got[i - 1]!.arrivedAt).toBeGreaterThanOrEqual(2400);
    const skipped = (await node.api("GET", "/v1/firings?state=SKIPPED&limit=1000")).json.items.filter((f: any) => f.job_id === "overlap");
    expect(skipped.length).toBeGreaterThanOrEqual(2);
    expect(skipped[0].last_error).toContain("overlap skip");
  });

  test("a cancel that arrives while an attempt is failing ends the firing CANCELLED, with no retry", async () => {
    receiver.script("cancel-fail", [{ status: 500, delayMs: 800 }, { status: 200 }]);
    await node.api("PUT", "/v1/jobs/cancel-fail", {
      schedule: { cron: "0 0 1 1 *" },
      target: { url: `${receiver.url}/cf` },
      retry: { max_attempts: 3, initial_backoff_ms: 50, max_backoff_ms: 100 },
    });
    const fired = (await node.api("POST", "/v1/jobs/cancel-fail/trigger")).json;
    await receiver.waitFor((r) => r.some((x) => x.headers["cronwheel-firing-id"] === fired.id));
    // Another node took the call: the flag is set, but the request is not aborted here.
    const store = (await import("../src/store/index.ts")).openStore;
    const s = await store(node.db);
    expect(await s.firings.cancel(fired.id, Date.now())).toBe("cancel-accepted");
    s.close();
    const ended = await waitState(fired.id, ["CANCELLED", "DONE", "DEAD"], 5_000);
    expect(ended.state).toBe("CANCELLED");
    await Bun.sleep(500);
    expect(receiver.forJob("cancel-fail")).toHaveLength(1);
  });

  test("a DEAD firing of a deleted job cannot be retried (409), and triggering a deleted job is 404", async () => {
    receiver.script("gone-job", [{ status: 400 }]);
    await node.api("PUT", "/v1/jobs/gone-job", { schedule: { cron: "0 0 1 1 *" }, target: { url: `${receiver.url}/g` } });
    const fired = (await node.api("POST", "/v1/jobs/gone-job/trigger")).json;
    await waitState(fired.id, ["DEAD"]);
    expect((await node.api("DELETE", "/v1/jobs/gone-job")).status).toBe(204);
    const r = await node.api("POST", `/v1/firings/${fired.id}/retry`);
    expect(r.status).toBe(409);
    expect(r.json.error.message).toContain("deleted");
    expect((await node.api("GET", `/v1/firings/${fired.id}`)).json.state).toBe("DEAD");
    expect((await node.api("POST", "/v1/jobs/gone-job/trigger")).status).toBe(404);
  });
});
