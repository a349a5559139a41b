// Priority shares under saturation (6:3:1), no starvation, and FIFO within a class.

import { describe, expect, test } from "bun:test";
import { FairQueue } from "../src/core/fair-queue.ts";
import type { Priority } from "../src/core/model.ts";

type Item = { p: Priority; seq: number };
const queue = () => new FairQueue<Item>((i) => i.p);

describe("FairQueue", () => {
  test("all three over-subscribed: shares are exactly 60/30/10 over every 10 turns", () => {
    const q = queue();
    let seq = 0;
    for (let i = 0; i < 1000; i++) for (const p of ["high", "normal", "low"] as const) q.push({ p, seq: seq++ });
    const taken = q.take(1000);
    const share = (p: Priority) => taken.filter((i) => i.p === p).length / taken.length;
    expect(share("high")).toBeCloseTo(0.6, 2);
    expect(share("normal")).toBeCloseTo(0.3, 2);
    expect(share("low")).toBeCloseTo(0.1, 2);
    for (let w = 0; w + 10 <= taken.length; w += 10) {
      expect(taken.slice(w, w + 10).filter((i) => i.p === "low")).toHaveLength(1);
    }
  });

  test("with new high-priority work arriving all the time, an old low-priority item still goes within 10 turns", () => {
    const q = queue();
    let seq = 0;
    q.push({ p: "low", seq: -1 });
    let turns = 0;
    for (;;) {
      for (let i = 0; i < 5; i++) q.push({ p: "high", seq: seq++ });
      const item = q.shift()!;
      turns++;
      if (item.p === "low") break;
      expect(turns).toBeLessThan(11);
    }
    expect(turns).toBeLessThanOrEqual(10);
  });

  test("FIFO within a class; an idle class earns no burst on return", () => {
    const q = queue();
    for (let i = 0; i < 100; i++) q.push({ p: "high", seq: i });
    expect(q.take(50).map((i) => i.seq)).toEqual(Array.from({ length: 50 }, (_, i) => i));
    // low was idle while high ran 50 turns; it now shares 1:6, not 50 turns in a row.
    for (let i = 0; i < 20; i++) q.push({ p: "low", seq: 1000 + i });
    const next = q.take(14);
    expect(next.filter((i) => i.p === "low").length).toBeLessThanOrEqual(3);
  });

  test("a single class gets all the capacity; unshift puts items back in front", () => {
    const q = queue();
    for (let i = 0; i < 5; i++) q.push({ p: "normal", seq: i });
    const two = q.take(2);
    q.unshift(two);
    expect(q.drain().map((i) => i.seq)).toEqual([0, 1, 2, 3, 4]);
    expect(q.size).toBe(0);
  });
});
