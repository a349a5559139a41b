// The Store contract, run against every implementation (store.test.ts: embedded file,
// remote-store.test.ts: Hrana over HTTP): fencing by epoch, job-version and update CAS, claims on
// the database clock, owner-aware claims, and insertMany all or nothing.

import { afterEach, expect, test } from "bun:test";
import type { Job } from "../../src/core/model.ts";
import { decideOverlap } from "../../src/core/overlap.ts";
import { testJob } from "./fixtures.ts";
import type { PlanEntry, Store } from "../../src/core/ports.ts";

export const job = (id: string, nextFireAt: number): Job => testJob({ id }, { nextFireAt });

export const entry = (jobId: string, at: number, version = 1): PlanEntry => ({
  jobId,
  version,
  nextFireAt: at + 1000,
  lastFiredAt: at,
  firings: [{ id: `f_${jobId}_${at}`, jobId, scheduledAt: at, catchup: false, manual: false, priority: "normal", owner: null }],
  skipStoredIds: [],
  catchupStoredIds: [],
});

/**
 * Declares the contract's tests in the enclosing describe. `open` gives a fresh, empty store;
 * `settled`, if given, runs at the end of every scenario while its store is still open, for the
 * implementation's own checks (the remote one: the server saw the requests, every stream closed).
 */
export function storeContract(open: () => Promise<Store>, settled?: () => Promise<void>): void {
  let opened: Store[] = [];

  afterEach(() => {
    for (const s of opened) s.close();
    opened = [];
  });

  async function fresh(): Promise<Store> {
    const s = await open();
    opened.push(s);
    return s;
  }

  test("only the current epoch can enqueue; a stale leader's plan writes nothing", async () => {
    const s = await fresh();
    await s.jobs.insert(job("a", 1000));
    const first = await s.lease.tryAcquire("n1", 50);
    expect(first?.epoch).toBe(1);
    expect(await s.lease.tryAcquire("n2", 50)).toBeNull(); // not expired yet
    await Bun.sleep(80);
    const second = await s.lease.tryAcquire("n2", 5000);
    expect(second?.epoch).toBe(2);
    const stale = await s.firings.applyPlan({ nodeId: "n1", epoch: 1 }, [entry("a", 1000)], 1);
    expect(stale).toEqual({ fenced: false, inserted: [] });
    expect((await s.jobs.get("a"))!.nextFireAt).toBe(1000);
    expect((await s.firings.listByJob("a", 10, null)).items).toEqual([]);
    expect(await s.lease.renew({ nodeId: "n1", epoch: 1 }, 5000)).toBe(false);
    const ok = await s.firings.applyPlan({ nodeId: "n2", epoch: 2 }, [entry("a", 1000)], 1);
    expect(ok.fenced).toBe(true);
    expect(ok.inserted.map((f) => [f.scheduledAt, f.epoch, f.state])).toEqual([[1000, 2, "SCHEDULED"]]);
    expect((await s.jobs.get("a"))!.nextFireAt).toBe(2000);
    // The same (job, instant) again is one firing.
    const again = await s.firings.applyPlan({ nodeId: "n2", epoch: 2 }, [entry("a", 1000)], 1);
    expect(again.inserted).toEqual([]);
    await settled?.();
  });

  test("a plan computed from an old job version changes nothing for that job", async () => {
    const s = await fresh();
    await s.jobs.insert(job("b", 1000));
    const lease = (await s.lease.tryAcquire("n", 5000))!;
    expect(await s.jobs.update({ ...job("b", 5000), version: 1 }, 1, 0, true)).toBe(true); // now version 2
    const r = await s.firings.applyPlan({ nodeId: "n", epoch: lease.epoch }, [entry("b", 1000, 1)], 1);
    expect(r.fenced).toBe(true);
    expect(r.inserted).toEqual([]);
    expect((await s.jobs.get("b"))!.nextFireAt).toBe(5000);
    await settled?.();
  });

  test("an update that loses its version check withdraws nothing (changes() in one batch)", async () => {
    const s = await fresh();
    const now = Date.now();
    await s.jobs.insert(job("c", now + 1000));
    const lease = (await s.lease.tryAcquire("n", 5000))!;
    await s.firings.applyPlan({ nodeId: "n", epoch: lease.epoch }, [entry("c", now + 1000)], now);
    expect(await s.jobs.update(job("c", now + 9000), 7, now, true)).toBe(false);
    expect((await s.firings.listByJob("c", 10, null)).items).toHaveLength(1);
    expect(await s.jobs.update(job("c", now + 9000), 1, now, true)).toBe(true);
    expect((await s.firings.listByJob("c", 10, null)).items).toHaveLength(0); // planned ahead: withdrawn
    await settled?.();
  });

  test("claims: one node wins a firing; when its heartbeat goes stale (database clock) the firing goes back to SCHEDULED", async () => {
    const s = await fresh();
    await s.jobs.insert(job("d", 1000));
    const lease = (await s.lease.tryAcquire("n", 5000))!;
    await s.firings.applyPlan({ nodeId: "n", epoch: lease.epoch }, [entry("d", 1000)], 0);
    await s.nodes.heartbeat("x", "http://x");
    await s.nodes.heartbeat("y", "http://y");
    const [x, y] = await Promise.all([
      s.firings.claimReady("x", ["x", "y"], 2000, -1e15, 100, 0),
      s.firings.claimReady("y", ["x", "y"], 2000, -1e15, 100, 0),
    ]);
    expect(x.length + y.length).toBe(1);
    expect(await s.firings.reclaimExpired(100, 0)).toBe(0); // heartbeats younger than 100 ms
    await Bun.sleep(150);
    expect(await s.firings.reclaimExpired(100, 0)).toBe(1);
    const back = (await s.firings.listByJob("d", 10, null)).items[0]!;
    expect(back.state).toBe("SCHEDULED");
    expect(back.claimedBy).toBeNull();
    await settled?.();
  });

  test("owner-aware claims: a live owner's firing is its own; a dead owner's is anyone's", async () => {
    const s = await fresh();
    await s.jobs.insert(job("e", 1000));
    const lease = (await s.lease.tryAcquire("n", 5000))!;
    const e = entry("e", 1000);
    e.firings[0]!.owner = "x";
    await s.firings.applyPlan({ nodeId: "n", epoch: lease.epoch }, [e], 0);
    expect(await s.firings.claimReady("y", ["x", "y"], 2000, -1e15, 100, 0)).toEqual([]);
    const taken = await s.firings.claimReady("y", ["y"], 2000, -1e15, 100, 0); // x is not alive
    expect(taken.map((f) => [f.owner, f.claimedBy])).toEqual([["x", "y"]]);
    await settled?.();
  });

  test("insertMany is all or nothing over an interactive transaction", async () => {
    const s = await fresh();
    const many = Array.from({ length: 600 }, (_, i) => job(`m-${String(i).padStart(3, "0")}`, 1000));
    expect(await s.jobs.insertMany(many)).toHaveLength(600);
    expect((await s.jobs.list(1000, null)).items).toHaveLength(600);
    // An existing id: found inside the transaction, rolled back, nothing written.
    expect(await s.jobs.insertMany([job("new-1", 1000), job("m-123", 1000)])).toEqual({ duplicate: "m-123" });
    expect(await s.jobs.get("new-1")).toBeNull();
    // A duplicate inside the call: the insert batch fails half way; closing the transaction
    // (remotely: its stream) rolls back.
    // Settled before expect() sees it: bun's expect(pending).rejects does not let the embedded
    // store's thread answer, and would wait forever.
    const failed = await s.jobs.insertMany([job("new-2", 1000), job("new-3", 1000), job("new-2", 1000)]).then(() => null, (err: unknown) => err);
    expect(failed).toBeInstanceOf(Error);
    expect(await s.jobs.get("new-2")).toBeNull();
    expect(await s.jobs.get("new-3")).toBeNull();
    expect((await s.jobs.list(1000, null)).items).toHaveLength(600);
    await settled?.();
  });

  /** Stores firings of job `jobId` at the given instants, each claimed by the given node. */
  async function claimedFirings(s: Store, jobId: string, claims: [number, string][]): Promise<string[]> {
    await s.jobs.insert(job(jobId, 0));
    const lease = (await s.lease.tryAcquire("leader", 60_000)) ?? (await s.lease.read());
    const plan: PlanEntry = { ...entry(jobId, 0), nextFireAt: null, lastFiredAt: null, firings: [] };
    for (const [at, node] of claims) {
      plan.firings.push({ id: `f_${jobId}_${at}`, jobId, scheduledAt: at, catchup: false, manual: false, priority: "normal", owner: node });
    }
    await s.firings.applyPlan({ nodeId: "leader", epoch: lease.epoch }, [plan], 0);
    const nodes = [...new Set(claims.map(([, n]) => n))];
    for (const node of nodes) await s.nodes.heartbeat(node, `http://${node}`);
    for (const node of nodes) await s.firings.claimReady(node, nodes, 1e15, -1e15, 1000, 0);
    return claims.map(([at]) => `f_${jobId}_${at}`);
  }

  const request = (jobId: string, at: number, overlap: "skip" | "coalesce" | "queue", maxQueue = 1) => ({
    firingId: `f_${jobId}_${at}`, jobId, scheduledAt: at, waiting: false, max: 1, overlap, maxQueue, catchup: false,
  });

  test("concurrency slots hold across nodes: a second node's firing is skipped while the first runs", async () => {
    const s = await fresh();
    const now = Date.now();
    await claimedFirings(s, "cap", [[now - 2000, "x"], [now, "y"]]);
    const a = await s.slots.admit("x", [request("cap", now - 2000, "skip")], 60_000, now - 2000, decideOverlap);
    expect(a.get(`f_cap_${now - 2000}`)).toEqual({ kind: "run" });
    const b = await s.slots.admit("y", [request("cap", now, "skip")], 60_000, now, decideOverlap);
    expect(b.get(`f_cap_${now}`)?.kind).toBe("skip");
    expect((await s.firings.get(`f_cap_${now}`))!.state).toBe("SKIPPED");
    // Another node cannot admit a firing it does not hold.
    const c = await s.slots.admit("z", [request("cap", now - 2000, "skip")], 60_000, now, decideOverlap);
    expect(c.get(`f_cap_${now - 2000}`)).toEqual({ kind: "gone" });
    await settled?.();
  });

  test("queue: waiting firings get the slot in order once it is released; beyond max_queue they are skipped", async () => {
    const s = await fresh();
    const t = Date.now();
    await claimedFirings(s, "q", [[t, "x"], [t + 1000, "y"], [t + 2000, "x"], [t + 3000, "y"]]);
    expect((await s.slots.admit("x", [request("q", t, "queue", 2)], 60_000, t, decideOverlap)).get(`f_q_${t}`)).toEqual({ kind: "run" });
    expect((await s.slots.admit("y", [request("q", t + 1000, "queue", 2)], 60_000, t + 1000, decideOverlap)).get(`f_q_${t + 1000}`)).toEqual({ kind: "wait" });
    expect((await s.slots.admit("x", [request("q", t + 2000, "queue", 2)], 60_000, t + 2000, decideOverlap)).get(`f_q_${t + 2000}`)).toEqual({ kind: "wait" });
    expect((await s.slots.admit("y", [request("q", t + 3000, "queue", 2)], 60_000, t + 3000, decideOverlap)).get(`f_q_${t + 3000}`)?.kind).toBe("skip");
    // The younger waiter cannot jump the older one when the slot frees.
    await s.slots.release("x", [`f_q_${t}`]);
    const again = (at: number) => ({ ...request("q", at, "queue", 2), waiting: true });
    expect((await s.slots.admit("x", [again(t + 2000)], 60_000, t + 4000, decideOverlap)).get(`f_q_${t + 2000}`)).toEqual({ kind: "wait" });
    expect((await s.slots.admit("y", [again(t + 1000)], 60_000, t + 4000, decideOverlap)).get(`f_q_${t + 1000}`)).toEqual({ kind: "run" });
    expect((await s.firings.get(`f_q_${t + 1000}`))!.waiting).toBe(false);
    expect((await s.firings.get(`f_q_${t + 2000}`))!.waiting).toBe(true);
    expect((await s.firings.get(`f_q_${t + 1000}`))!.state).toBe("CLAIMED");
    await settled?.();
  });

  test("a slot stops counting when its node's heartbeat goes stale (database clock)", async () => {
    const s = await fresh();
    const now = Date.now();
    await claimedFirings(s, "exp", [[now - 5000, "x"], [now, "y"]]);
    expect((await s.slots.admit("x", [request("exp", now - 5000, "skip")], 100, now - 5000, decideOverlap)).get(`f_exp_${now - 5000}`)).toEqual({ kind: "run" });
    await Bun.sleep(150);
    await s.nodes.heartbeat("y", "http://y"); // y lives on; x has been silent for 150 ms
    expect((await s.slots.admit("y", [request("exp", now, "skip")], 100, now, decideOverlap)).get(`f_exp_${now}`)).toEqual({ kind: "run" });
    await settled?.();
  });

  test("a node that starts hands back what an earlier process with its id held; triggers need their job", async () => {
    const s = await fresh();
    const now = Date.now();
    await claimedFirings(s, "held", [[now, "x"]]);
    expect((await s.slots.admit("x", [request("held", now, "skip")], 60_000, now, decideOverlap)).get(`f_held_${now}`)).toEqual({ kind: "run" });
    expect(await s.firings.releaseAllHeldBy("x", now)).toBe(1);
    const f = (await s.firings.get(`f_held_${now}`))!;
    expect([f.state, f.claimedBy]).toEqual(["SCHEDULED", null]);
    // Its slot went with it: another node's firing of the job may run.
    await claimedFirings(s, "held2", [[now, "y"]]);
    const manual = { id: "f_manual", jobId: "no-such-job", scheduledAt: now, catchup: false, manual: true, priority: "normal" as const, owner: null };
    expect(await s.firings.insertManual(manual, 1, now)).toBeNull();
    await settled?.();
  });

  test("a slot held by a firing that itself started late does not make the next one skip: it waits its turn", async () => {
    const s = await fresh();
    const t = Date.now();
    await claimedFirings(s, "late", [[t - 5000, "x"], [t, "y"]]);
    // Started 4.9 s after its own instant (a backlog catching up), still running at t.
    expect((await s.slots.admit("x", [request("late", t - 5000, "skip")], 60_000, t - 100, decideOverlap)).get(`f_late_${t - 5000}`)).toEqual({ kind: "run" });
    expect((await s.slots.admit("y", [request("late", t, "skip")], 60_000, t, decideOverlap)).get(`f_late_${t}`)).toEqual({ kind: "wait" });
    expect((await s.firings.get(`f_late_${t}`))!.state).toBe("CLAIMED");
    await settled?.();
  });

  test("misfire recovery only takes firings nobody holds; a re-driven DEAD firing is claimable however old", async () => {
    const s = await fresh();
    const old = Date.now() - 3_600_000;
    await claimedFirings(s, "held-old", [[old, "x"]]);
    // Claimed (or waiting for a slot) by a live node: not recovery's to skip.
    expect(await s.firings.missedStored(Date.now() - 60_000, 100)).toEqual([]);
    expect(await s.firings.releaseAllHeldBy("x", Date.now())).toBe(1);
    expect((await s.firings.missedStored(Date.now() - 60_000, 100)).map((f) => f.id)).toEqual([`f_held-old_${old}`]);
    // A DEAD firing re-driven now restarts the clock: claimable, not "missed".
    await s.nodes.heartbeat("x", "http://x");
    const [claimed] = await s.firings.claimReady("x", ["x"], Date.now() + 1000, -1e15, 10, Date.now());
    await s.firings.markRunning("x", [claimed!.id], Date.now());
    await s.firings.finish("x", [{ id: claimed!.id, state: "DEAD", error: "HTTP 400" }], Date.now());
    expect((await s.firings.retryDead(claimed!.id, Date.now()))?.state).toBe("RETRYING");
    const again = await s.firings.claimReady("x", ["x"], Date.now() + 1000, Date.now() - 60_000, 10, Date.now());
    expect(again.map((f) => f.id)).toEqual([claimed!.id]);
    await settled?.();
  });

  test("a running firing whose cancel was accepted ends CANCELLED when its node dies, not RETRYING", async () => {
    const s = await fresh();
    const now = Date.now();
    await claimedFirings(s, "doomed", [[now, "x"]]);
    const id = `f_doomed_${now}`;
    await s.firings.markRunning("x", [id], now);
    expect(await s.firings.cancel(id, now)).toBe("cancel-accepted");
    await Bun.sleep(150); // x stops heartbeating
    expect(await s.firings.reclaimExpired(100, Date.now())).toBe(1);
    expect((await s.firings.get(id))!.state).toBe("CANCELLED");
    await settled?.();
  });
}
