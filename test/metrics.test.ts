// GET /metrics is valid Prometheus text, carries the SPEC families with a node label, and moves
// when firings happen; with a token it needs the token like /v1.

import { afterAll, beforeAll, expect, test } from "bun:test";
import { startTestNode, type TestNode } from "./helpers/node.ts";
import { Receiver } from "./helpers/receiver.ts";

const receiver = new Receiver();
let node: TestNode;

beforeAll(async () => {
  await receiver.start();
  node = await startTestNode(["--token", "tok"]);
});
afterAll(async () => {
  await node.stop(0);
  receiver.stop();
});

type Sample = { name: string; labels: Record<string, string>; value: number };

/** A strict reader of the text exposition format: every line a comment or a sample. */
function parsePrometheus(text: string): { samples: Sample[]; types: Map<string, string> } {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const line of text.split("\n")) {
    if (line === "") continue;
    const type = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (type) {
      types.set(type[1]!, type[2]!);
      continue;
    }
    if (/^# HELP [a-zA-Z_:][a-zA-Z0-9_:]* .*$/.test(line)) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*)\})? (-?[0-9.e+]+|\+Inf|NaN)$/.exec(line);
    if (!m) throw new Error(`not Prometheus text: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[k!] = v!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return { samples, types };
}

const auth = { authorization: "Bearer tok" };
const scrape = async () => parsePrometheus(await (await fetch(`${node.url}/metrics`, { headers: auth })).text());
const value = (s: Sample[], name: string, labels: Record<string, string> = {}) =>
  s.filter((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v)).reduce((n, x) => n + x.value, 0);

test("metrics parse, carry the node label, and move when firings happen", async () => {
  expect((await fetch(`${node.url}/metrics`)).status).toBe(401);
  const before = await scrape();
  expect(before.types.get("cronwheel_backlog")).toBe("gauge");
  expect(before.types.get("cronwheel_leader")).toBe("gauge");
  expect(value(before.samples, "cronwheel_leader")).toBe(1);
  expect(value(before.samples, "cronwheel_epoch")).toBeGreaterThanOrEqual(1);
  for (const s of before.samples) expect(s.labels.node).toBe(node.nodeId);

  receiver.script("m-fail", [{ status: 400 }]);
  await node.api("PUT", "/v1/jobs/m-ok", { schedule: { at: new Date(Date.now() + 300).toISOString() }, target: { url: `${receiver.url}/ok` } }, auth);
  await node.api("PUT", "/v1/jobs/m-fail", { schedule: { at: new Date(Date.now() + 300).toISOString() }, target: { url: `${receiver.url}/fail` } }, auth);
  await receiver.waitFor((r) => r.length >= 2);
  await Bun.sleep(300);
  const after = await scrape();
  expect(after.types.get("cronwheel_firings_total")).toBe("counter");
  expect(value(after.samples, "cronwheel_firings_total", { outcome: "DONE" })).toBe(1);
  expect(value(after.samples, "cronwheel_firings_total", { outcome: "DEAD" })).toBe(1);
  expect(after.types.get("cronwheel_lateness_ms")).toBe("histogram");
  expect(value(after.samples, "cronwheel_lateness_ms_count")).toBe(2);
  expect(value(after.samples, "cronwheel_delivery_latency_ms_count")).toBe(2);
  // Millisecond resolution: the smallest lateness bucket is 1 ms.
  expect(after.samples.some((s) => s.name === "cronwheel_lateness_ms_bucket" && s.labels.le === "1")).toBe(true);
  const inf = value(after.samples, "cronwheel_lateness_ms_bucket", { le: "+Inf" });
  expect(inf).toBe(2);
  // The planner's cost of finding due work (bench/tick-scaling.ts reads these).
  expect(after.types.get("cronwheel_find_due_ms")).toBe("histogram");
  expect(value(after.samples, "cronwheel_find_due_ms_count")).toBeGreaterThan(value(before.samples, "cronwheel_find_due_ms_count"));
  expect(after.types.get("cronwheel_found_due_total")).toBe("counter");
  expect(value(after.samples, "cronwheel_found_due_total")).toBeGreaterThanOrEqual(2);
  expect(value(after.samples, "cronwheel_enqueued_firings_total")).toBeGreaterThanOrEqual(2);
});
