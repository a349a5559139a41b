// The per-job concurrency gate and its overlap policies, on a virtual timeline: each firing is
// due one second after the previous one and is asked about at its instant, unless a test
// says it arrives late.

import { describe, expect, test } from "bun:test";
import { ConcurrencyGate, type Concurrency } from "../src/core/gate.ts";
import type { Firing } from "../src/core/model.ts";

const firing = (id: string, scheduledAt: number, catchup = false): Firing => ({
  id, jobId: "j", scheduledAt, state: "CLAIMED", attempts: 0, catchup, epoch: 1, lastError: null,
  createdAt: 0, updatedAt: 0, nextAttemptAt: scheduledAt, claimedBy: "n", claimExpiresAt: 0, cancelRequested: false,
  manual: false, owner: null, deliveredBy: null,
});
const cap = (overlap: Concurrency["overlap"], max = 1, max_queue = 2): Concurrency => ({ max, overlap, max_queue });

class Timeline {
  at = 1000;
  readonly g = new ConcurrencyGate();
  /** The next firing comes due and is admitted at its instant (or `lateMs` after it). */
  admit(id: string, c: Concurrency, opts: { catchup?: boolean; lateMs?: number; sameInstant?: boolean } = {}) {
    if (!opts.sameInstant) this.at += 1000;
    return this.g.admit(firing(id, this.at, opts.catchup), c, this.at + (opts.lateMs ?? 0));
  }
  release(id: string, c: Concurrency): string[] {
    return this.g.release("j", id, c, this.at).map((f) => f.id);
  }
}

describe("ConcurrencyGate", () => {
  test("skip: a firing due while the cap is held is skipped with a reason", () => {
    const t = new Timeline();
    expect(t.admit("a", cap("skip")).kind).toBe("run");
    const b = t.admit("b", cap("skip"));
    expect(b.kind).toBe("skip");
    expect(b.kind === "skip" && b.reason).toContain("overlap skip");
    expect(t.release("a", cap("skip"))).toEqual([]);
    expect(t.admit("c", cap("skip")).kind).toBe("run");
  });

  test("coalesce: at most one pending firing waits", () => {
    const t = new Timeline();
    t.admit("a", cap("coalesce"));
    expect(t.admit("b", cap("coalesce")).kind).toBe("wait");
    expect(t.admit("c", cap("coalesce")).kind).toBe("skip");
    expect(t.release("a", cap("coalesce"))).toEqual(["b"]);
    expect(t.g.running("j")).toBe(1);
  });

  test("queue: waits up to max_queue, newer arrivals beyond are skipped, order kept", () => {
    const t = new Timeline();
    t.admit("a", cap("queue"));
    expect(t.admit("b", cap("queue")).kind).toBe("wait");
    expect(t.admit("c", cap("queue")).kind).toBe("wait");
    expect(t.admit("d", cap("queue")).kind).toBe("skip");
    expect(t.release("a", cap("queue"))).toEqual(["b"]);
    expect(t.release("b", cap("queue"))).toEqual(["c"]);
  });

  test("allow: no cap", () => {
    const t = new Timeline();
    for (const id of ["a", "b", "c"]) expect(t.admit(id, cap("allow")).kind).toBe("run");
  });

  test("max 2 lets two run at once", () => {
    const t = new Timeline();
    expect(t.admit("a", cap("skip", 2)).kind).toBe("run");
    expect(t.admit("b", cap("skip", 2)).kind).toBe("run");
    expect(t.admit("c", cap("skip", 2)).kind).toBe("skip");
  });

  test("catch-up firings are never skipped: they wait their turn", () => {
    const t = new Timeline();
    t.admit("a", cap("skip"));
    expect(t.admit("c1", cap("skip"), { catchup: true }).kind).toBe("wait");
    expect(t.admit("c2", cap("skip"), { catchup: true }).kind).toBe("wait");
    expect(t.release("a", cap("skip"))).toEqual(["c1"]);
    expect(t.release("c1", cap("skip"))).toEqual(["c2"]);
  });

  test("firings arriving late together run one after another: at their instants nothing ran", () => {
    const t = new Timeline();
    // Two instants re-claimed from a dead node, both handed over 5 s after the second was due.
    const first = t.g.admit(firing("x1", 2000), cap("skip"), 8000);
    const second = t.g.admit(firing("x2", 3000), cap("skip"), 8000);
    expect(first.kind).toBe("run");
    expect(second.kind).toBe("wait");
    expect(t.g.release("j", "x1", cap("skip"), 8010).map((f) => f.id)).toEqual(["x2"]);
    // A firing due while x2 (taken at 8010) runs is skipped as usual.
    expect(t.g.admit(firing("x3", 9000), cap("skip"), 9000).kind).toBe("skip");
  });

  test("a retry of a slot holder runs without taking a second slot", () => {
    const t = new Timeline();
    t.g.seed(new Map([["j", ["a"]]]));
    expect(t.g.admit(firing("a", 500), cap("skip"), 5000).kind).toBe("run");
    expect(t.g.running("j")).toBe(1);
    expect(t.admit("b", cap("skip")).kind).toBe("skip");
  });
});
