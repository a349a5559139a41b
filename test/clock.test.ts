// VirtualClock contract: deterministic timer order, cancel, sleep/abort, and follow-up timers
// scheduled by woken async code firing within the same advance. systemClock gets a smoke test.

import { describe, expect, test } from "bun:test";
import { systemClock, VirtualClock } from "../src/core/clock.ts";

describe("VirtualClock", () => {
  test("starts at the given wall time with mono at 0; both move together", async () => {
    const clock = new VirtualClock(1_000_000);
    expect(clock.now()).toBe(1_000_000);
    expect(clock.monoNow()).toBe(0);
    await clock.advance(250);
    expect(clock.now()).toBe(1_000_250);
    expect(clock.monoNow()).toBe(250);
    await clock.advanceTo(1_002_000);
    expect(clock.now()).toBe(1_002_000);
    expect(clock.monoNow()).toBe(2_000);
  });

  test("timers fire in due order, ties in insertion order, with now() at their due time", async () => {
    const clock = new VirtualClock(0);
    const fired: string[] = [];
    const record = (name: string) => () => fired.push(`${name}@${clock.now()}`);
    clock.setTimer(30, record("c"));
    clock.setTimer(10, record("a1"));
    clock.setTimer(20, record("b"));
    clock.setTimer(10, record("a2"));
    clock.setTimer(31, record("late"));
    expect(clock.pendingTimers()).toBe(5);
    await clock.advance(30);
    expect(fired).toEqual(["a1@10", "a2@10", "b@20", "c@30"]);
    expect(clock.now()).toBe(30);
    expect(clock.pendingTimers()).toBe(1);
    await clock.advance(1);
    expect(fired.at(-1)).toBe("late@31");
    expect(clock.pendingTimers()).toBe(0);
  });

  test("a zero or negative delay fires on the next advance, even advance(0)", async () => {
    const clock = new VirtualClock(5);
    let fired = 0;
    clock.setTimer(0, () => fired++);
    clock.setTimer(-10, () => fired++);
    await clock.advance(0);
    expect(fired).toBe(2);
    expect(clock.now()).toBe(5);
  });

  test("cancel prevents firing, is idempotent, and is a no-op after firing", async () => {
    const clock = new VirtualClock();
    let fired = 0;
    const cancel = clock.setTimer(10, () => fired++);
    const cancelAfter = clock.setTimer(5, () => fired++);
    cancel();
    cancel();
    expect(clock.pendingTimers()).toBe(1);
    await clock.advance(20);
    expect(fired).toBe(1);
    cancelAfter();
    expect(clock.pendingTimers()).toBe(0);
  });

  test("cancelling many far-off timers leaves only the live one pending", async () => {
    const clock = new VirtualClock();
    let fired = 0;
    for (let i = 0; i < 10_000; i++) clock.setTimer(1_000_000 + i, () => fired++)();
    clock.setTimer(1, () => fired++);
    expect(clock.pendingTimers()).toBe(1);
    await clock.advance(2_000_000);
    expect(fired).toBe(1);
  });

  test("sleep resolves at the right virtual time", async () => {
    const clock = new VirtualClock(100);
    let wokeAt: number | undefined;
    const sleeping = clock.sleep(50).then(() => {
      wokeAt = clock.now();
    });
    await clock.advance(49);
    expect(wokeAt).toBeUndefined();
    await clock.advance(1);
    await sleeping;
    expect(wokeAt).toBe(150);
  });

  test("sleep rejects with the abort reason and cancels its timer", async () => {
    const clock = new VirtualClock();
    const controller = new AbortController();
    const sleeping = clock.sleep(1_000, controller.signal);
    expect(clock.pendingTimers()).toBe(1);
    const reason = new Error("shutting down");
    controller.abort(reason);
    await expect(sleeping).rejects.toBe(reason);
    expect(clock.pendingTimers()).toBe(0);
  });

  test("sleep with an already aborted signal rejects at once without a timer", async () => {
    const clock = new VirtualClock();
    const reason = new Error("already");
    await expect(clock.sleep(10, AbortSignal.abort(reason))).rejects.toBe(reason);
    expect(clock.pendingTimers()).toBe(0);
  });

  test("a timer set from inside a timer callback fires in the same advance if due", async () => {
    const clock = new VirtualClock();
    const fired: number[] = [];
    clock.setTimer(10, () => {
      fired.push(clock.now());
      clock.setTimer(5, () => fired.push(clock.now()));
      clock.setTimer(100, () => fired.push(clock.now()));
    });
    await clock.advance(20);
    expect(fired).toEqual([10, 15]);
    expect(clock.now()).toBe(20);
    expect(clock.pendingTimers()).toBe(1);
  });

  test("async loops woken by a sleep keep running within one advance", async () => {
    const clock = new VirtualClock();
    const ticks: number[] = [];
    const loop = (async () => {
      for (let i = 0; i < 5; i++) {
        await clock.sleep(10);
        await Promise.resolve(); // extra async hops between wake-up and next sleep
        ticks.push(clock.monoNow());
      }
    })();
    await clock.advance(45);
    expect(ticks).toEqual([10, 20, 30, 40]);
    await clock.advance(5);
    await loop;
    expect(ticks).toEqual([10, 20, 30, 40, 50]);
  });

  test("back-to-back advances queue up instead of overlapping", async () => {
    const clock = new VirtualClock();
    const fired: number[] = [];
    clock.setTimer(15, () => fired.push(clock.now()));
    await Promise.all([clock.advance(10), clock.advance(10)]);
    expect(clock.now()).toBe(20);
    expect(fired).toEqual([15]);
  });

  test("refuses to move backwards", () => {
    const clock = new VirtualClock(1_000);
    expect(() => clock.advance(-1)).toThrow(RangeError);
    expect(() => clock.advanceTo(999)).toThrow(RangeError);
  });
});

describe("systemClock", () => {
  test("reads real time and fires and cancels real timers", async () => {
    const wallBefore = Date.now();
    expect(Math.abs(systemClock.now() - wallBefore)).toBeLessThan(1_000);
    const monoBefore = systemClock.monoNow();
    await systemClock.sleep(5);
    expect(systemClock.monoNow()).toBeGreaterThan(monoBefore);

    let fired = false;
    systemClock.setTimer(1, () => {
      fired = true;
    })();
    await systemClock.sleep(10);
    expect(fired).toBe(false);
  });

  test("sleep abort rejects with the reason", async () => {
    const controller = new AbortController();
    const sleeping = systemClock.sleep(60_000, controller.signal);
    controller.abort(new Error("stop"));
    await expect(sleeping).rejects.toThrow("stop");
  });
});
