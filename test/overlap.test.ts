// The overlap policy as a pure decision: what a firing does when it finds its job's cap held.

import { describe, expect, test } from "bun:test";
import { decideOverlap, type OverlapFacts } from "../src/core/overlap.ts";

const facts = (f: Partial<OverlapFacts>): OverlapFacts => ({
  overlap: "skip", max: 1, maxQueue: 2, catchup: false, heldAtInstant: 1, pending: 0, ...f,
});

describe("decideOverlap", () => {
  test("skip: skipped with a reason while the cap was held at its instant", () => {
    const d = decideOverlap(facts({ overlap: "skip" }));
    expect(d.kind).toBe("skip");
    expect(d.kind === "skip" && d.reason).toContain("overlap skip");
  });

  test("coalesce: the first pending waits, a second is skipped", () => {
    expect(decideOverlap(facts({ overlap: "coalesce", pending: 0 }))).toEqual({ kind: "wait", counted: true });
    expect(decideOverlap(facts({ overlap: "coalesce", pending: 1 })).kind).toBe("skip");
  });

  test("queue: waits up to max_queue, then newer arrivals are skipped", () => {
    expect(decideOverlap(facts({ overlap: "queue", pending: 1, maxQueue: 2 }))).toEqual({ kind: "wait", counted: true });
    const d = decideOverlap(facts({ overlap: "queue", pending: 2, maxQueue: 2 }));
    expect(d.kind === "skip" && d.reason).toContain("max_queue 2");
  });

  test("max 2: one slot held at its instant leaves room to wait for the other, not skip", () => {
    expect(decideOverlap(facts({ max: 2, heldAtInstant: 1 }))).toEqual({ kind: "wait", counted: false });
    expect(decideOverlap(facts({ max: 2, heldAtInstant: 2 })).kind).toBe("skip");
  });

  test("catch-up firings are never skipped and do not use queue room", () => {
    for (const overlap of ["skip", "coalesce", "queue"] as const) {
      expect(decideOverlap(facts({ overlap, catchup: true, pending: 99 }))).toEqual({ kind: "wait", counted: false });
    }
  });

  test("late arrivals: if the slot was taken after its instant, it waits its turn uncounted", () => {
    expect(decideOverlap(facts({ overlap: "skip", heldAtInstant: 0 }))).toEqual({ kind: "wait", counted: false });
  });

  test("free at its instant but another firing already queued: the policy applies to the queue", () => {
    expect(decideOverlap(facts({ overlap: "coalesce", heldAtInstant: 0, pending: 1 })).kind).toBe("skip");
    expect(decideOverlap(facts({ overlap: "queue", heldAtInstant: 0, pending: 1, maxQueue: 2 }))).toEqual({ kind: "wait", counted: true });
    expect(decideOverlap(facts({ overlap: "queue", heldAtInstant: 0, pending: 2, maxQueue: 2 })).kind).toBe("skip");
  });
});
