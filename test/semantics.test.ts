// Overlap policies held cluster-wide, with real processes and a slow receiver: an every-second
// job whose handler takes 3.5 s never has two requests in flight; skip keeps nothing pending,
// coalesce at most one, queue at most max_queue. Then the same with one job's firings spread
// over three nodes (--spread firing), where only the store-held cap can keep them apart.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { tempDbUrl } from "./helpers/node.ts";
import { eventually, startServe, type ServeProcess } from "./helpers/process.ts";
import { Receiver } from "./helpers/receiver.ts";

const HANDLER_MS = 3_500;
const RUN_MS = 11_000;

for (const nodeCount of [1, 3]) {
  describe(nodeCount === 1 ? "one node" : "three nodes, one job's firings spread over all", () => {
    const receiver = new Receiver();
    let nodes: ServeProcess[] = [];

    beforeAll(async () => {
      await receiver.start();
      const db = tempDbUrl();
      for (let i = 1; i <= nodeCount; i++) nodes.push(await startServe(db, ["--node-id", `s${i}`, "--lease-ms", "2000", "--spread", "firing"]));
      await eventually(async () => {
        const v = (await nodes[0]!.api("GET", "/v1/cluster")).json;
        return v.leader && v.nodes.filter((n: any) => n.alive).length === nodeCount;
      }, 10_000, "the cluster to form");
    });
    afterAll(async () => {
      for (const n of nodes) await n.kill9();
      nodes = [];
      receiver.stop();
    });

    for (const [overlap, maxWaiting] of [["skip", 0], ["coalesce", 1], ["queue", 2]] as const) {
      test(`${overlap}: never two in flight, at most ${maxWaiting} waiting`, async () => {
        const id = `slow-${overlap}`;
        receiver.script(id, Array.from({ length: 30 }, () => ({ status: 200, delayMs: HANDLER_MS })));
        const created = await nodes[0]!.api("PUT", `/v1/jobs/${id}`, {
          schedule: { every: "1s" },
          target: { url: `${receiver.url}/slow`, timeout_ms: 10_000 },
          concurrency: { max: 1, overlap, max_queue: 2 },
        });
        expect(created.status).toBe(201);
        let seenWaiting = 0;
        const until = Date.now() + RUN_MS;
        while (Date.now() < until) {
          const firings = (await nodes[0]!.api("GET", `/v1/jobs/${id}/firings?limit=100`)).json.items as any[];
          seenWaiting = Math.max(seenWaiting, firings.filter((f) => f.waiting && ["SCHEDULED", "CLAIMED"].includes(f.state)).length);
          await Bun.sleep(150);
        }
        await nodes[0]!.api("DELETE", `/v1/jobs/${id}`);
        const firings = (await nodes[0]!.api("GET", `/v1/firings?state=SKIPPED&limit=1000`)).json.items.filter((f: any) => f.job_id === id);
        const got = receiver.forJob(id);
        expect(got.length).toBeGreaterThanOrEqual(3);
        expect(receiver.maxConcurrent(id)).toBe(1);
        expect(seenWaiting).toBe(maxWaiting);
        expect(firings.length).toBeGreaterThanOrEqual(2);
        for (const f of firings) expect(f.last_error).toContain(`overlap ${overlap}`);
        if (nodeCount > 1) {
          const done = (await nodes[0]!.api("GET", `/v1/firings?state=DONE&limit=1000`)).json.items.filter((f: any) => f.job_id === id);
          const skippedBy = new Set(firings.map((f: any) => f.owner));
          expect(new Set([...done.map((f: any) => f.delivered_by), ...skippedBy]).size).toBeGreaterThanOrEqual(2);
        }
      }, 40_000);
    }

    test("cancel through any node: the delivering node aborts the request within a second", async () => {
      const id = "cancel-me";
      receiver.script(id, [{ status: 200, delayMs: 30_000 }]);
      await nodes[0]!.api("PUT", `/v1/jobs/${id}`, { schedule: { cron: "0 0 1 1 *" }, target: { url: `${receiver.url}/c`, timeout_ms: 60_000 } });
      const fired = (await nodes[0]!.api("POST", `/v1/jobs/${id}/trigger`)).json;
      await receiver.waitFor((r) => r.some((x) => x.headers["cronwheel-firing-id"] === fired.id));
      const running = await eventually(async () => {
        const f = (await nodes[0]!.api("GET", `/v1/firings/${fired.id}`)).json;
        return f.state === "RUNNING" ? f : null;
      }, 5_000, "RUNNING");
      // Ask a node other than the one delivering, when there is one.
      const asked = nodes.find((n, i) => `s${i + 1}` !== running.delivered_by) ?? nodes[0]!;
      const abortedBefore = receiver.aborted;
      const t0 = Date.now();
      const r = await asked.api("POST", `/v1/firings/${fired.id}/cancel`);
      expect(r.status).toBe(202);
      await receiver.waitFor(() => receiver.aborted > abortedBefore, 3_000);
      expect(Date.now() - t0).toBeLessThan(1_500);
      const done = await eventually(async () => {
        const f = (await nodes[0]!.api("GET", `/v1/firings/${fired.id}`)).json;
        return f.state === "CANCELLED" ? f : null;
      }, 3_000, "CANCELLED");
      expect(done.attempts).toBe(1);
      expect((await asked.api("POST", `/v1/firings/${fired.id}/cancel`)).status).toBe(409);
    }, 30_000);

    test("changing a job while one of its firings waits for the slot does not strand that firing", async () => {
      const id = "patch-waiting";
      receiver.script(id, Array.from({ length: 10 }, () => ({ status: 200, delayMs: 2_000 })));
      await nodes[0]!.api("PUT", `/v1/jobs/${id}`, {
        schedule: { every: "1s" },
        target: { url: `${receiver.url}/pw`, timeout_ms: 10_000 },
        concurrency: { max: 1, overlap: "coalesce" },
      });
      const waiting = await eventually(async () => {
        const items = (await nodes[0]!.api("GET", `/v1/jobs/${id}/firings?limit=50`)).json.items as any[];
        return items.find((f) => f.waiting) ?? null;
      }, 10_000, "a waiting firing");
      expect((await nodes[0]!.api("PATCH", `/v1/jobs/${id}`, { metadata: { changed: true } })).status).toBe(200);
      await receiver.waitFor((r) => r.some((x) => x.headers["cronwheel-firing-id"] === waiting.id), 8_000);
      await nodes[0]!.api("DELETE", `/v1/jobs/${id}`);
    }, 30_000);

    test("deleting a job with firings running and waiting leaves none of them unfinished", async () => {
      const id = "delete-busy";
      receiver.script(id, Array.from({ length: 10 }, () => ({ status: 200, delayMs: 3_000 })));
      await nodes[0]!.api("PUT", `/v1/jobs/${id}`, {
        schedule: { every: "1s" },
        target: { url: `${receiver.url}/d`, timeout_ms: 10_000 },
        concurrency: { max: 1, overlap: "queue", max_queue: 3 },
      });
      await eventually(async () => {
        const items = (await nodes[0]!.api("GET", `/v1/jobs/${id}/firings?limit=50`)).json.items as any[];
        return items.some((f) => f.state === "RUNNING") && items.some((f) => f.waiting);
      }, 10_000, "one running and one waiting");
      expect((await nodes[0]!.api("DELETE", `/v1/jobs/${id}`)).status).toBe(204);
      const unfinished = await eventually(async () => {
        const items = (await nodes[0]!.api("GET", `/v1/firings?limit=1000`)).json.items.filter((f: any) => f.job_id === id);
        const open = items.filter((f: any) => ["SCHEDULED", "CLAIMED", "RUNNING", "RETRYING"].includes(f.state));
        return open.length === 0 ? items : null;
      }, 5_000, "every firing of the deleted job to finish");
      expect(unfinished.filter((f: any) => f.state === "CANCELLED").length).toBeGreaterThanOrEqual(2);
      const count = receiver.forJob(id).length;
      await Bun.sleep(1_500);
      expect(receiver.forJob(id).length).toBe(count);
    }, 30_000);
  });
}
