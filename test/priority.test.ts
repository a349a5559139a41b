// Priority under saturation with a real node and receiver: delivery capacity limited to two
// requests in flight against a slow receiver, all three priorities over-subscribed. Delivered
// shares must be within 5 points of 60/30/10, and low priority must get through every second;
// the backlog (due minus finished) shows on the job and in /metrics.

import { afterAll, beforeAll, expect, test } from "bun:test";
import { startTestNode, type TestNode } from "./helpers/node.ts";
import { Receiver } from "./helpers/receiver.ts";

const receiver = new Receiver();
let node: TestNode;

beforeAll(async () => {
  await receiver.start();
  node = await startTestNode(["--max-in-flight", "2"]);
});
afterAll(async () => {
  await node.stop(0);
  receiver.stop();
});

test("shares 6:3:1 when saturated; no priority starves", async () => {
  const PER_PRIORITY = 100; // 300 firings/s against about 100/s of capacity
  const jobs = (["high", "normal", "low"] as const).flatMap((priority) =>
    Array.from({ length: PER_PRIORITY }, (_, i) => {
      const id = `${priority}-${i}`;
      receiver.script(id, Array.from({ length: 20 }, () => ({ status: 200, delayMs: 20 })));
      return { id, priority, schedule: { every: "1s" }, target: { url: `${receiver.url}/p` }, concurrency: { overlap: "allow" } };
    }),
  );
  expect((await node.api("POST", "/v1/jobs/batch", { jobs })).status).toBe(201);
  const start = Date.now();
  await Bun.sleep(9_000);
  // Saturated: firings came due faster than they finish, per job and overall.
  const low = (await node.api("GET", "/v1/jobs/low-0")).json;
  expect(low.backlog).toBeGreaterThanOrEqual(1);
  const metrics = await (await fetch(`${node.url}/metrics`)).text();
  const backlog = Number(/^cronwheel_backlog\{[^}]*\} (\d+)$/m.exec(metrics)?.[1]);
  expect(backlog).toBeGreaterThan(200);
  for (const p of ["high", "normal", "low"]) {
    for (let i = 0; i < PER_PRIORITY; i++) await node.api("POST", `/v1/jobs/${p}-${i}/pause`);
  }
  // Measure once the queues are full: from 2 s to 8 s after the first firings.
  const window = receiver.received.filter((r) => r.arrivedAt >= start + 3_000 && r.arrivedAt < start + 9_000);
  const count = (p: string) => window.filter((r) => r.headers["cronwheel-job-id"]!.startsWith(`${p}-`)).length;
  const total = window.length;
  expect(total).toBeGreaterThan(300);
  const shares = { high: count("high") / total, normal: count("normal") / total, low: count("low") / total };
  expect(Math.abs(shares.high - 0.6)).toBeLessThanOrEqual(0.05);
  expect(Math.abs(shares.normal - 0.3)).toBeLessThanOrEqual(0.05);
  expect(Math.abs(shares.low - 0.1)).toBeLessThanOrEqual(0.05);
  // Every second of the window delivered some low-priority firings.
  for (let s = 3; s < 9; s++) {
    const low = window.filter((r) => r.arrivedAt >= start + s * 1000 && r.arrivedAt < start + (s + 1) * 1000 && r.headers["cronwheel-job-id"]!.startsWith("low-"));
    expect(low.length).toBeGreaterThan(0);
  }
  console.log(`priority shares over ${total} deliveries: ${JSON.stringify(shares)}`);
}, 60_000);
