// kill -9 and restart with real processes: no acknowledged job is lost, and each misfire
// policy is applied exactly to the instants that came due while no node was up.

import { afterAll, beforeAll, expect, test } from "bun:test";
import { tempDbUrl } from "./helpers/node.ts";
import { eventually, startServe, type ServeProcess } from "./helpers/process.ts";
import { Receiver } from "./helpers/receiver.ts";

const receiver = new Receiver();
const FLAGS = ["--lease-ms", "1000", "--misfire-threshold-ms", "2000", "--plan-ahead-ms", "2000"];
let node: ServeProcess | null = null;

beforeAll(async () => {
  await receiver.start();
});
afterAll(async () => {
  if (node) await node.kill9();
  receiver.stop();
});

const scheduled = (jobId: string) => receiver.forJob(jobId).map((r) => Date.parse(r.headers["cronwheel-scheduled-at"]!));

test("kill -9, down for 6 s, restart: acknowledged jobs survive and misfire policies hold", async () => {
  const db = tempDbUrl();
  node = await startServe(db, FLAGS);
  const target = { url: `${receiver.url}/hook` };
  for (const [id, misfire] of [
    ["m-once", { policy: "fire_once" }],
    ["m-all", { policy: "fire_all", max_catchup: 3 }],
    ["m-skip", { policy: "skip" }],
  ] as const) {
    const r = await node.api("PUT", `/v1/jobs/${id}`, { schedule: { every: "1s" }, target, misfire });
    expect(r.status).toBe(201);
  }
  await receiver.waitFor(() => ["m-once", "m-all", "m-skip"].every((id) => receiver.forJob(id).length >= 2), 10_000);

  // One-shots due while the node is down, and jobs acknowledged just before the crash.
  const shotAt = new Date(Date.now() + 3_000).toISOString();
  expect((await node.api("PUT", "/v1/jobs/shot-once", { schedule: { at: shotAt }, target })).status).toBe(201);
  expect((await node.api("PUT", "/v1/jobs/shot-skip", { schedule: { at: shotAt }, target, misfire: { policy: "skip" } })).status).toBe(201);
  const acked: string[] = [];
  for (let i = 0; i < 50; i++) {
    const r = await node.api("POST", "/v1/jobs", { id: `ack-${i}`, schedule: { cron: "0 0 1 1 *" }, target });
    expect(r.status).toBe(201);
    acked.push(r.json.id);
  }
  await node.kill9();
  const killedAt = Date.now();
  const lastBefore = Object.fromEntries(["m-once", "m-all", "m-skip"].map((id) => [id, Math.max(...scheduled(id))]));
  await Bun.sleep(6_000);

  node = await startServe(db, FLAGS);
  const restartedAt = Date.now();
  for (const id of acked) expect((await node.api("GET", `/v1/jobs/${id}`)).status).toBe(200);

  // Wait until regular firings after the restart flow again for every job.
  await receiver.waitFor(() => ["m-once", "m-all", "m-skip"].every((id) => scheduled(id).some((t) => t > restartedAt + 1_000)), 15_000);
  await eventually(async () => receiver.forJob("shot-once").length === 1, 10_000, "shot-once catch-up");

  const firings = async (jobId: string) => (await node!.api("GET", `/v1/jobs/${jobId}/firings?limit=1000`)).json.items as any[];
  // Recovery happens once this node leads; what it fired as catch-up is marked so.
  const catchups = async (jobId: string) => (await firings(jobId)).filter((f) => f.catchup).map((f) => Date.parse(f.scheduled_at)).sort();

  // fire_once: exactly one catch-up, for the most recent missed instant; nothing else in the gap.
  const once = await catchups("m-once");
  expect(once).toHaveLength(1);
  const recoveredAt = once[0]!;
  expect(recoveredAt).toBeGreaterThan(restartedAt - 1_000);
  const onceGap = scheduled("m-once").filter((t) => t > lastBefore["m-once"]! && t < recoveredAt);
  expect(onceGap).toEqual([]);

  // fire_all with max_catchup 3: the three most recent missed instants, one second apart, oldest first.
  const all = await catchups("m-all");
  expect(all).toHaveLength(3);
  expect(all[1]! - all[0]!).toBe(1000);
  expect(all[2]! - all[1]!).toBe(1000);
  const delivered = scheduled("m-all");
  expect(delivered.filter((t) => all.includes(t))).toEqual(all);
  expect(delivered.filter((t) => t > lastBefore["m-all"]! && t < all[0]!)).toEqual([]);

  // skip: no catch-up, nothing delivered for the instants that were missed.
  expect(await catchups("m-skip")).toEqual([]);
  const skipGap = scheduled("m-skip").filter((t) => t > lastBefore["m-skip"]! && t < restartedAt - 2_000);
  expect(skipGap).toEqual([]);
  // Firings enqueued ahead by the dead node and never attempted were dropped, not lost silently.
  const skippedStored = (await firings("m-skip")).filter((f) => f.state === "SKIPPED");
  for (const f of skippedStored) expect(f.last_error).toContain("misfire");

  // One-shots: fire_once fires once as catch-up; skip never fires and is exhausted.
  const shot = (await firings("shot-once"))[0];
  expect(shot.catchup).toBe(true);
  expect(shot.scheduled_at).toBe(shotAt);
  expect(receiver.forJob("shot-skip")).toHaveLength(0);
  expect((await node.api("GET", "/v1/jobs/shot-skip")).json.next_fire_at).toBeNull();

  // No instant was delivered twice (no delivery was in flight at the kill, so no excuse).
  for (const id of ["m-once", "m-all", "m-skip", "shot-once"]) {
    const keys = receiver.forJob(id).map((r) => r.headers["idempotency-key"]);
    expect(new Set(keys).size).toBe(keys.length);
  }
  expect(killedAt).toBeLessThan(restartedAt);
});
