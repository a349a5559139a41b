// The per-job concurrency gate and its overlap policies.

import { describe, expect, test } from "bun:test";
import { ConcurrencyGate, type Concurrency } from "../src/core/gate.ts";
import type { Firing } from "../src/core/model.ts";

const firing = (id: string, catchup = false): Firing => ({
  id, jobId: "j", scheduledAt: 0, state: "CLAIMED", attempts: 0, catchup, epoch: 1, lastError: null,
  createdAt: 0, updatedAt: 0, nextAttemptAt: 0, claimedBy: "n", claimExpiresAt: 0, cancelRequested: false, manual: false, owner: null,
});
const cap = (overlap: Concurrency["overlap"], max = 1, max_queue = 2): Concurrency => ({ max, overlap, max_queue });

describe("ConcurrencyGate", () => {
  test("skip: a firing due while the cap is held is skipped with a reason", () => {
    const g = new ConcurrencyGate();
    expect(g.admit(firing("a"), cap("skip")).kind).toBe("run");
    const b = g.admit(firing("b"), cap("skip"));
    expect(b.kind).toBe("skip");
    expect(b.kind === "skip" && b.reason).toContain("overlap skip");
    expect(g.release("j", "a", cap("skip"))).toEqual([]);
    expect(g.admit(firing("c"), cap("skip")).kind).toBe("run");
  });

  test("coalesce: at most one pending firing waits", () => {
    const g = new ConcurrencyGate();
    g.admit(firing("a"), cap("coalesce"));
    expect(g.admit(firing("b"), cap("coalesce")).kind).toBe("wait");
    expect(g.admit(firing("c"), cap("coalesce")).kind).toBe("skip");
    expect(g.release("j", "a", cap("coalesce")).map((f) => f.id)).toEqual(["b"]);
    expect(g.running("j")).toBe(1);
  });

  test("queue: waits up to max_queue, newer arrivals beyond are skipped, order kept", () => {
    const g = new ConcurrencyGate();
    g.admit(firing("a"), cap("queue"));
    expect(g.admit(firing("b"), cap("queue")).kind).toBe("wait");
    expect(g.admit(firing("c"), cap("queue")).kind).toBe("wait");
    expect(g.admit(firing("d"), cap("queue")).kind).toBe("skip");
    expect(g.release("j", "a", cap("queue")).map((f) => f.id)).toEqual(["b"]);
    expect(g.release("j", "b", cap("queue")).map((f) => f.id)).toEqual(["c"]);
  });

  test("allow: no cap", () => {
    const g = new ConcurrencyGate();
    for (const id of ["a", "b", "c"]) expect(g.admit(firing(id), cap("allow")).kind).toBe("run");
  });

  test("max 2 lets two run at once", () => {
    const g = new ConcurrencyGate();
    expect(g.admit(firing("a"), cap("skip", 2)).kind).toBe("run");
    expect(g.admit(firing("b"), cap("skip", 2)).kind).toBe("run");
    expect(g.admit(firing("c"), cap("skip", 2)).kind).toBe("skip");
  });

  test("catch-up firings are never skipped: they wait their turn", () => {
    const g = new ConcurrencyGate();
    g.admit(firing("a"), cap("skip"));
    expect(g.admit(firing("c1", true), cap("skip")).kind).toBe("wait");
    expect(g.admit(firing("c2", true), cap("skip")).kind).toBe("wait");
    expect(g.release("j", "a", cap("skip")).map((f) => f.id)).toEqual(["c1"]);
    expect(g.release("j", "c1", cap("skip")).map((f) => f.id)).toEqual(["c2"]);
  });

  test("a retry of a slot holder runs without taking a second slot", () => {
    const g = new ConcurrencyGate();
    g.seed(new Map([["j", ["a"]]]));
    expect(g.admit(firing("a"), cap("skip")).kind).toBe("run");
    expect(g.running("j")).toBe(1);
    expect(g.admit(firing("b"), cap("skip")).kind).toBe("skip");
  });
});
