// TimingWheel against a naive sorted-array model (seeded, replayable), plus targeted cases:
// ordering, replacement, past entries, mid-tick entries, nextDueMs as a driver would use it,
// and that long empty stretches of virtual time take few steps.

import { describe, expect, test } from "bun:test";
import { TimingWheel, type TimingWheelOptions } from "../src/core/wheel.ts";

const HOUR_MS = 3_600_000;

/** mulberry32: tiny, seedable, good enough to drive a property test. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The obviously-correct reference: scan and sort everything on every advance. */
class ModelWheel {
  private readonly entries = new Map<string, { dueMs: number; value: number; seq: number }>();
  private seq = 0;
  constructor(private nowMs: number) {}
  get size(): number {
    return this.entries.size;
  }
  add(key: string, dueMs: number, value: number): void {
    this.entries.set(key, { dueMs, value, seq: this.seq++ });
  }
  cancel(key: string): boolean {
    return this.entries.delete(key);
  }
  has(key: string): boolean {
    return this.entries.has(key);
  }
  minDueMs(): number | null {
    let min: number | null = null;
    for (const e of this.entries.values()) if (min === null || e.dueMs < min) min = e.dueMs;
    return min;
  }
  advance(nowMs: number): Array<{ key: string; dueMs: number; value: number }> {
    this.nowMs = Math.max(this.nowMs, nowMs);
    const due = [...this.entries].filter(([, e]) => e.dueMs <= this.nowMs);
    due.sort(([, a], [, b]) => a.dueMs - b.dueMs || a.seq - b.seq);
    for (const [key] of due) this.entries.delete(key);
    return due.map(([key, e]) => ({ key, dueMs: e.dueMs, value: e.value }));
  }
}

function pick<T>(random: () => number, items: readonly T[]): T {
  return items[Math.floor(random() * items.length)]!;
}

function runProperty(seed: number, opts: TimingWheelOptions, startMs: number, steps: number): void {
  const random = prng(seed);
  const wheel = new TimingWheel<number>(startMs, opts);
  const model = new ModelWheel(startMs);
  let nowMs = startMs;
  const span = (maxMs: number) => Math.floor(random() * maxMs);
  // Offsets from "now" in several scales so every level, the overflow and the past get used.
  const scales = [1, 10, 100, 5_000, 300_000, 6 * HOUR_MS, 30 * HOUR_MS];
  for (let step = 0; step < steps; step++) {
    const op = random();
    const context = `seed ${seed} step ${step}`;
    if (op < 0.45) {
      const key = `k${span(400)}`;
      let dueMs = random() < 0.1 ? nowMs - span(2_000) : nowMs + span(pick(random, scales));
      // Round some due times so that ties meet across levels, where only seq can order them.
      if (random() < 0.3) dueMs = Math.ceil(dueMs / 50) * 50;
      wheel.add(key, dueMs, step);
      model.add(key, dueMs, step);
    } else if (op < 0.6) {
      const key = `k${span(400)}`;
      expect(wheel.cancel(key), context).toBe(model.cancel(key));
    } else {
      const r = random();
      const jumpMs = r < 0.05 ? -span(1_000) : r < 0.15 ? 0 : span(pick(random, scales));
      nowMs += jumpMs;
      expect(wheel.advance(nowMs), context).toEqual(model.advance(nowMs));
      nowMs = Math.max(nowMs, nowMs - jumpMs); // the wheel never moves backwards
    }
    expect(wheel.size, context).toBe(model.size);
    const probe = `k${span(400)}`;
    expect(wheel.has(probe), context).toBe(model.has(probe));
    const next = wheel.nextDueMs();
    const trueMin = model.minDueMs();
    if (trueMin === null) expect(next, context).toBeNull();
    else expect(next!, context).toBeLessThanOrEqual(trueMin);
  }
  // Drain: nothing may be lost.
  expect(wheel.advance(nowMs + 100 * HOUR_MS)).toEqual(model.advance(nowMs + 100 * HOUR_MS));
  expect(wheel.size).toBe(0);
}

describe("TimingWheel matches a naive model", () => {
  const configs: Array<[string, TimingWheelOptions, number]> = [
    ["defaults at an epoch-ms start", {}, 1_767_225_600_000],
    ["tiny wheel (4 slots x 3 levels): mostly overflow and cascades", { slotsPerLevel: 4, levels: 3 }, 0],
    ["coarse ticks (7 ms): entries due mid-tick", { tickMs: 7, slotsPerLevel: 8, levels: 2 }, 3],
    ["one level", { tickMs: 1_000, slotsPerLevel: 60, levels: 1 }, 123_456],
  ];
  for (const [name, opts, startMs] of configs) {
    test(name, () => {
      for (const seed of [1, 2, 3]) runProperty(seed, opts, startMs, 3_000);
    });
  }
});

describe("TimingWheel", () => {
  test("orders by due time, ties by insertion order, across levels and overflow", () => {
    const wheel = new TimingWheel<string>(0, { slotsPerLevel: 4, levels: 2 });
    wheel.add("far", 1_000, "far"); // overflow (range is 16 ticks)
    wheel.add("b1", 5, "b1");
    wheel.add("a", 2, "a");
    wheel.add("b2", 5, "b2");
    wheel.add("mid", 12, "mid");
    wheel.add("far-tie", 1_000, "far-tie");
    expect(wheel.advance(4).map((e) => e.key)).toEqual(["a"]);
    expect(wheel.advance(2_000).map((e) => e.key)).toEqual(["b1", "b2", "mid", "far", "far-tie"]);
  });

  test("ties keep insertion order when the entries were placed at different times", () => {
    const wheel = new TimingWheel<string>(0);
    wheel.add("early", 5_000, "placed at level 2, then cascaded");
    expect(wheel.advance(4_990)).toEqual([]);
    wheel.add("late", 5_000, "placed after the cascade");
    expect(wheel.advance(5_000).map((e) => e.key)).toEqual(["early", "late"]);
  });

  test("each returned entry carries its key, due time and value", () => {
    const wheel = new TimingWheel<{ jobId: number }>(100);
    wheel.add("x", 150, { jobId: 7 });
    expect(wheel.advance(200)).toEqual([{ key: "x", dueMs: 150, value: { jobId: 7 } }]);
  });

  test("re-adding a key replaces it and counts as a new insertion", () => {
    const wheel = new TimingWheel<number>(0);
    wheel.add("a", 100, 1);
    wheel.add("b", 50, 2);
    wheel.add("a", 50, 3);
    expect(wheel.size).toBe(2);
    expect(wheel.advance(60)).toEqual([
      { key: "b", dueMs: 50, value: 2 },
      { key: "a", dueMs: 50, value: 3 },
    ]);
    expect(wheel.advance(10_000)).toEqual([]);
  });

  test("cancel removes an entry once; unknown and fired keys report false", () => {
    const wheel = new TimingWheel<number>(0);
    wheel.add("a", 10, 1);
    wheel.add("b", 20, 2);
    expect(wheel.cancel("a")).toBe(true);
    expect(wheel.cancel("a")).toBe(false);
    expect(wheel.has("a")).toBe(false);
    expect(wheel.cancel("nope")).toBe(false);
    expect(wheel.advance(30).map((e) => e.key)).toEqual(["b"]);
    expect(wheel.cancel("b")).toBe(false);
    expect(wheel.size).toBe(0);
  });

  test("entries added at or before the current time come out at the next advance", () => {
    const wheel = new TimingWheel<number>(1_000);
    wheel.add("now", 1_000, 1);
    wheel.add("before", 400, 2);
    expect(wheel.nextDueMs()).toBe(400);
    // Even an advance that does not move time (or asks to move it back) returns them.
    expect(wheel.advance(900)).toEqual([
      { key: "before", dueMs: 400, value: 2 },
      { key: "now", dueMs: 1_000, value: 1 },
    ]);
    expect(wheel.advance(900)).toEqual([]);
  });

  test("time never moves backwards", () => {
    const wheel = new TimingWheel<number>(0);
    wheel.advance(1_000);
    wheel.add("x", 800, 1); // behind the wheel's time, so it is due already
    wheel.add("y", 1_001, 2);
    expect(wheel.advance(500).map((e) => e.key)).toEqual(["x"]);
    expect(wheel.advance(1_001).map((e) => e.key)).toEqual(["y"]);
  });

  test("an entry due later within the current tick waits for its own time", () => {
    const wheel = new TimingWheel<number>(15, { tickMs: 10 });
    wheel.add("x", 17, 1);
    expect(wheel.advance(16)).toEqual([]);
    expect(wheel.nextDueMs()).toBe(17);
    expect(wheel.advance(17).map((e) => e.key)).toEqual(["x"]);
  });

  test("nextDueMs is exact within level 0 and a lower bound beyond it", () => {
    const wheel = new TimingWheel<number>(0);
    expect(wheel.nextDueMs()).toBeNull();
    wheel.add("far", 10 * HOUR_MS, 1);
    const far = wheel.nextDueMs()!;
    expect(far).toBeGreaterThan(0);
    expect(far).toBeLessThanOrEqual(10 * HOUR_MS);
    wheel.add("soon", 37, 2);
    expect(wheel.nextDueMs()).toBe(37);
    wheel.cancel("soon");
    wheel.add("second", 1_500, 3);
    expect(wheel.nextDueMs()).toBeLessThanOrEqual(1_500);
  });

  test("a driver sleeping until nextDueMs gets every entry, in order, in few wake-ups", () => {
    const random = prng(42);
    const wheel = new TimingWheel<number>(0);
    const model = new ModelWheel(0);
    for (let i = 0; i < 500; i++) {
      const dueMs = Math.floor(random() * 48 * HOUR_MS);
      wheel.add(`k${i}`, dueMs, i);
      model.add(`k${i}`, dueMs, i);
    }
    const got: Array<{ key: string; dueMs: number; value: number }> = [];
    let wakeUps = 0;
    let lastMs = -1;
    for (let next = wheel.nextDueMs(); next !== null; next = wheel.nextDueMs()) {
      expect(next).toBeGreaterThan(lastMs); // progress on every wake-up
      lastMs = next;
      wakeUps++;
      for (const entry of wheel.advance(next)) {
        expect(entry.dueMs).toBe(next); // nothing comes out late
        got.push(entry);
      }
    }
    expect(got).toEqual(model.advance(48 * HOUR_MS));
    // Each entry costs at most one wake-up per level plus one for leaving overflow.
    expect(wakeUps).toBeLessThanOrEqual(500 * 5 + 48 / 4);
  });

  test("24 h of virtual time with one entry takes a handful of steps", () => {
    const start = 1_767_225_600_000;
    const wheel = new TimingWheel<string>(start);
    wheel.add("daily", start + 24 * HOUR_MS, "x");
    expect(wheel.advance(start + 24 * HOUR_MS - 1)).toEqual([]);
    expect(wheel.advance(start + 24 * HOUR_MS).map((e) => e.key)).toEqual(["daily"]);
    expect(wheel.positionsVisited).toBeLessThan(20);

    // Same again in one-minute steps, as a driver polling a quiet wheel would.
    const polled = new TimingWheel<string>(start);
    polled.add("daily", start + 24 * HOUR_MS, "x");
    const fired: number[] = [];
    for (let t = start; t <= start + 24 * HOUR_MS; t += 60_000) {
      for (const e of polled.advance(t)) fired.push(e.dueMs);
    }
    expect(fired).toEqual([start + 24 * HOUR_MS]);
    expect(polled.positionsVisited).toBeLessThan(20);
  });

  test("rejects non-finite times and bad options", () => {
    const wheel = new TimingWheel<number>(0);
    expect(() => wheel.add("x", Number.NaN, 1)).toThrow(RangeError);
    expect(() => wheel.add("x", Infinity, 1)).toThrow(RangeError);
    expect(() => wheel.advance(Number.NaN)).toThrow(RangeError);
    expect(() => new TimingWheel(0, { tickMs: 0 })).toThrow(RangeError);
    expect(() => new TimingWheel(0, { slotsPerLevel: 1 })).toThrow(RangeError);
    expect(() => new TimingWheel(0, { levels: 0 })).toThrow(RangeError);
  });
});
