// API contract on one real node: CRUD, pagination, pause/resume/trigger, cancel, auth, and
// bad input, where every 4xx must carry SPEC's error shape and change nothing.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { startTestNode, type TestNode } from "./helpers/node.ts";

let node: TestNode;
let authed: TestNode;

beforeAll(async () => {
  node = await startTestNode();
  authed = await startTestNode(["--token", "t0ken"]);
});
afterAll(async () => {
  await node.stop(500);
  await authed.stop(500);
});

const far = "2099-01-01T00:00:00Z";
const job = (id: string, extra: Record<string, unknown> = {}) => ({
  id,
  schedule: { cron: "0 9 * * *", timezone: "Europe/Berlin" },
  target: { url: "http://127.0.0.1:9/hook" },
  ...extra,
});

function expectErrorShape(json: any) {
  expect(typeof json.error.code).toBe("string");
  expect(typeof json.error.message).toBe("string");
  expect(Array.isArray(json.error.issues)).toBe(true);
  for (const i of json.error.issues) {
    expect(typeof i.path).toBe("string");
    expect(typeof i.message).toBe("string");
  }
}

describe("jobs", () => {
  test("create applies SPEC defaults and computes next_fire_at in the job's zone", async () => {
    const r = await node.api("POST", "/v1/jobs", job("defaults"));
    expect(r.status).toBe(201);
    expect(r.json.retry).toEqual({ max_attempts: 3, initial_backoff_ms: 1000, max_backoff_ms: 60000 });
    expect(r.json.misfire).toEqual({ policy: "fire_once", max_catchup: 100 });
    expect(r.json.concurrency).toEqual({ max: 1, overlap: "skip", max_queue: 10 });
    expect(r.json.priority).toBe("normal");
    expect(r.json.target.method).toBe("POST");
    expect(r.json.target.timeout_ms).toBe(10000);
    expect(r.json.paused).toBe(false);
    const next = new Date(r.json.next_fire_at);
    const berlinHour = Number(new Intl.DateTimeFormat("en-GB", { timeZone: "Europe/Berlin", hour: "2-digit" }).format(next));
    expect(berlinHour).toBe(9);
    expect(next.getTime()).toBeGreaterThan(Date.now());
  });

  test("the server picks an id when none is given; a taken id is 409", async () => {
    const { id: _, ...noId } = job("x");
    const r = await node.api("POST", "/v1/jobs", noId);
    expect(r.status).toBe(201);
    expect(r.json.id).toMatch(/^j_/);
    const again = await node.api("POST", "/v1/jobs", job("defaults"));
    expect(again.status).toBe(409);
    expectErrorShape(again.json);
  });

  test("PUT creates then replaces, and re-running it is harmless", async () => {
    const a = await node.api("PUT", "/v1/jobs/put-me", job("put-me"));
    expect(a.status).toBe(201);
    const b = await node.api("PUT", "/v1/jobs/put-me", job("put-me"));
    expect(b.status).toBe(200);
    expect(b.json.updated_at).toBe(a.json.updated_at);
    const c = await node.api("PUT", "/v1/jobs/put-me", { ...job("put-me"), priority: "high" });
    expect(c.status).toBe(200);
    expect(c.json.priority).toBe("high");
  });

  test("PATCH merges fields; a schedule change recomputes next_fire_at", async () => {
    await node.api("PUT", "/v1/jobs/patch-me", job("patch-me"));
    const r = await node.api("PATCH", "/v1/jobs/patch-me", { target: { timeout_ms: 500 }, schedule: { cron: "0 0 1 1 *", timezone: "UTC" } });
    expect(r.status).toBe(200);
    expect(r.json.target.url).toBe("http://127.0.0.1:9/hook");
    expect(r.json.target.timeout_ms).toBe(500);
    expect(r.json.next_fire_at).toMatch(/-01-01T00:00:00.000Z$/);
  });

  test("keyset pagination walks every job once", async () => {
    const ids = Array.from({ length: 25 }, (_, i) => `page-${String(i).padStart(2, "0")}`);
    const b = await node.api("POST", "/v1/jobs/batch", { jobs: ids.map((id) => job(id)) });
    expect(b.status).toBe(201);
    expect(b.json.ids).toEqual(ids);
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: any = await node.api("GET", `/v1/jobs?limit=7${cursor ? `&cursor=${cursor}` : ""}`);
      expect(page.status).toBe(200);
      expect(page.json.items.length).toBeLessThanOrEqual(7);
      seen.push(...page.json.items.map((j: any) => j.id));
      cursor = page.json.next_cursor;
    } while (cursor);
    expect(new Set(seen).size).toBe(seen.length);
    for (const id of ids) expect(seen).toContain(id);
  });

  test("a batch is all or nothing", async () => {
    const r = await node.api("POST", "/v1/jobs/batch", { jobs: [job("batch-ok-1"), { ...job("batch-bad"), schedule: { cron: "nope" } }] });
    expect(r.status).toBe(400);
    expect(r.json.error.issues[0].path).toBe("jobs.1.schedule");
    expect((await node.api("GET", "/v1/jobs/batch-ok-1")).status).toBe(404);
    const dup = await node.api("POST", "/v1/jobs/batch", { jobs: [job("batch-ok-2"), job("defaults")] });
    expect(dup.status).toBe(409);
    expect((await node.api("GET", "/v1/jobs/batch-ok-2")).status).toBe(404);
    const twice = await node.api("POST", "/v1/jobs/batch", { jobs: [job("batch-twice"), job("batch-twice")] });
    expect(twice.status).toBe(409);
    expect((await node.api("GET", "/v1/jobs/batch-twice")).status).toBe(404);
  });

  test("pause clears next_fire_at; resume computes it from now; delete is 204 then 404", async () => {
    await node.api("PUT", "/v1/jobs/pausable", job("pausable"));
    const p = await node.api("POST", "/v1/jobs/pausable/pause");
    expect(p.status).toBe(200);
    expect(p.json.paused).toBe(true);
    expect(p.json.next_fire_at).toBeNull();
    const r = await node.api("POST", "/v1/jobs/pausable/resume");
    expect(r.json.paused).toBe(false);
    expect(Date.parse(r.json.next_fire_at)).toBeGreaterThan(Date.now());
    expect((await node.api("DELETE", "/v1/jobs/pausable")).status).toBe(204);
    expect((await node.api("GET", "/v1/jobs/pausable")).status).toBe(404);
    expect((await node.api("DELETE", "/v1/jobs/pausable")).status).toBe(404);
  });

  test("trigger makes a manual firing, listed under its job", async () => {
    await node.api("PUT", "/v1/jobs/trig", job("trig"));
    const t = await node.api("POST", "/v1/jobs/trig/trigger");
    expect(t.status).toBe(202);
    expect(t.json.manual).toBe(true);
    expect(t.json.state).toBe("SCHEDULED");
    expect(t.json.job_id).toBe("trig");
    const listed = await node.api("GET", "/v1/jobs/trig/firings");
    expect(listed.json.items.map((f: any) => f.id)).toContain(t.json.id);
    expect((await node.api("POST", "/v1/jobs/none-such/trigger")).status).toBe(404);
    expect((await node.api("POST", "/v1/firings/f_nope/cancel")).status).toBe(404);
  });

  test("preview shows the DST policy: Berlin 02:30 shifts to the jump on 2027-03-28", async () => {
    const r = await node.api("GET", "/v1/preview?cron=30%202%20*%20*%20*&timezone=Europe/Berlin&from=2027-03-27T00:00:00Z&count=3");
    expect(r.status).toBe(200);
    expect(r.json.times).toEqual(["2027-03-27T01:30:00.000Z", "2027-03-28T01:00:00.000Z", "2027-03-29T00:30:00.000Z"]);
    const skip = await node.api("GET", "/v1/preview?cron=30%202%20*%20*%20*&timezone=Europe/Berlin&dst_gap=skip&from=2027-03-27T00:00:00Z&count=2");
    expect(skip.json.times).toEqual(["2027-03-27T01:30:00.000Z", "2027-03-29T00:30:00.000Z"]);
    const every = await node.api("GET", "/v1/preview?every=15m&from=2027-01-01T00:00:00Z&count=2");
    expect(every.json.times).toEqual(["2027-01-01T00:15:00.000Z", "2027-01-01T00:30:00.000Z"]);
  });
});

describe("auth", () => {
  test("a token guards /v1 but not /healthz", async () => {
    expect((await authed.api("GET", "/healthz")).status).toBe(200);
    const none = await authed.api("GET", "/v1/jobs");
    expect(none.status).toBe(401);
    expectErrorShape(none.json);
    expect((await authed.api("GET", "/v1/jobs", undefined, { authorization: "Bearer wrong" })).status).toBe(401);
    expect((await authed.api("GET", "/v1/jobs", undefined, { authorization: "Bearer t0ken" })).status).toBe(200);
  });
});

describe("bad input gets a 4xx with the SPEC error shape and changes nothing", () => {
  const base = job("bad");
  const cases: [string, string, string, unknown, number][] = [
    ["body not JSON", "POST", "/v1/jobs", "{nope", 400],
    ["empty body", "POST", "/v1/jobs", "", 400],
    ["body is an array", "POST", "/v1/jobs", [1, 2], 400],
    ["missing schedule", "POST", "/v1/jobs", { target: base.target }, 400],
    ["missing target.url", "POST", "/v1/jobs", { schedule: base.schedule, target: {} }, 400],
    ["unknown field", "POST", "/v1/jobs", { ...base, schedul: {} }, 400],
    ["cron minute 61", "POST", "/v1/jobs", { ...base, schedule: { cron: "61 * * * *" } }, 400],
    ["cron with 4 fields", "POST", "/v1/jobs", { ...base, schedule: { cron: "* * * *" } }, 400],
    ["cron that never fires", "POST", "/v1/jobs", { ...base, schedule: { cron: "0 0 30 2 *" } }, 400],
    ["unknown zone", "POST", "/v1/jobs", { ...base, schedule: { cron: "0 9 * * *", timezone: "Mars/Olympus" } }, 400],
    ["offset instead of zone", "POST", "/v1/jobs", { ...base, schedule: { cron: "0 9 * * *", timezone: "+02:00" } }, 400],
    ["bad dst_gap", "POST", "/v1/jobs", { ...base, schedule: { cron: "0 9 * * *", dst_gap: "later" } }, 400],
    ["two schedule kinds", "POST", "/v1/jobs", { ...base, schedule: { cron: "0 9 * * *", every: "5m" } }, 400],
    ["every 0s", "POST", "/v1/jobs", { ...base, schedule: { every: "0s" } }, 400],
    ["every 5x", "POST", "/v1/jobs", { ...base, schedule: { every: "5x" } }, 400],
    ["at not RFC 3339", "POST", "/v1/jobs", { ...base, schedule: { at: "2027-01-01 10:00" } }, 400],
    ["start_at after end_at", "POST", "/v1/jobs", { ...base, schedule: { cron: "0 9 * * *", start_at: far, end_at: "2098-01-01T00:00:00Z" } }, 400],
    ["ftp url", "POST", "/v1/jobs", { ...base, target: { url: "ftp://example.com/x" } }, 400],
    ["relative url", "POST", "/v1/jobs", { ...base, target: { url: "/hook" } }, 400],
    ["bad method", "POST", "/v1/jobs", { ...base, target: { ...base.target, method: "TRACE" } }, 400],
    ["reserved header", "POST", "/v1/jobs", { ...base, target: { ...base.target, headers: { "Idempotency-Key": "x" } } }, 400],
    ["header with newline", "POST", "/v1/jobs", { ...base, target: { ...base.target, headers: { "X-A": "a\r\nB: c" } } }, 400],
    ["timeout 0", "POST", "/v1/jobs", { ...base, target: { ...base.target, timeout_ms: 0 } }, 400],
    ["max_attempts 0", "POST", "/v1/jobs", { ...base, retry: { max_attempts: 0 } }, 400],
    ["max_backoff < initial", "POST", "/v1/jobs", { ...base, retry: { initial_backoff_ms: 5000, max_backoff_ms: 10 } }, 400],
    ["bad misfire policy", "POST", "/v1/jobs", { ...base, misfire: { policy: "sometimes" } }, 400],
    ["bad overlap", "POST", "/v1/jobs", { ...base, concurrency: { overlap: "pile-up" } }, 400],
    ["bad priority", "POST", "/v1/jobs", { ...base, priority: "urgent" }, 400],
    ["bad id", "POST", "/v1/jobs", { ...base, id: "has space" }, 400],
    ["id too long", "POST", "/v1/jobs", { ...base, id: "a".repeat(200) }, 400],
    ["PUT id mismatch", "PUT", "/v1/jobs/bad", { ...base, id: "other" }, 400],
    ["empty batch", "POST", "/v1/jobs/batch", { jobs: [] }, 400],
    ["batch over 10,000", "POST", "/v1/jobs/batch", { jobs: Array.from({ length: 10_001 }, () => ({})) }, 400],
    ["limit=0", "GET", "/v1/jobs?limit=0", undefined, 400],
    ["limit=abc", "GET", "/v1/jobs?limit=abc", undefined, 400],
    ["cursor forged", "GET", "/v1/jobs?cursor=zzz", undefined, 400],
    ["unknown state filter", "GET", "/v1/firings?state=SLEEPING", undefined, 400],
    ["preview count 5000", "GET", "/v1/preview?cron=*%20*%20*%20*%20*&count=5000", undefined, 400],
    ["preview bad cron", "GET", "/v1/preview?cron=nope", undefined, 400],
    ["preview nothing", "GET", "/v1/preview", undefined, 400],
    ["patch unknown field", "PATCH", "/v1/jobs/defaults", { nope: 1 }, 400],
    ["patch bad cron", "PATCH", "/v1/jobs/defaults", { schedule: { cron: "99 * * * *" } }, 400],
    ["body too large", "POST", "/v1/jobs", { ...base, metadata: { x: "y".repeat(300_000) } }, 413],
    ["unknown route", "GET", "/v1/nothing", undefined, 404],
    ["job not found", "GET", "/v1/jobs/none-such", undefined, 404],
    ["firing not found", "GET", "/v1/firings/f_none", undefined, 404],
    ["retry of a missing firing", "POST", "/v1/firings/f_none/retry", undefined, 404],
  ];

  test.each(cases)("%s", async (_name, method, path, body, status) => {
    const before = await node.api("GET", "/v1/jobs?limit=1000");
    const defaultsBefore = await node.api("GET", "/v1/jobs/defaults");
    const r = await node.api(method, path, body);
    expect(r.status).toBe(status);
    expectErrorShape(r.json);
    const after = await node.api("GET", "/v1/jobs?limit=1000");
    expect(after.json.items.map((j: any) => j.id)).toEqual(before.json.items.map((j: any) => j.id));
    expect((await node.api("GET", "/v1/jobs/defaults")).json).toEqual(defaultsBefore.json);
  });
});
