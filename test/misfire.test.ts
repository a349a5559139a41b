// Misfire selection (pure) and the planner's use of it, in virtual time with no store I/O.

import { describe, expect, test } from "bun:test";
import { VirtualClock } from "../src/core/clock.ts";
import type { Leader } from "../src/core/leader.ts";
import { silentLogger } from "../src/core/log.ts";
import { decideMisfire } from "../src/core/misfire.ts";
import type { Job, JobSpec } from "../src/core/model.ts";
import { DEFAULT_PLANNER_OPTIONS, Planner } from "../src/core/planner.ts";
import type { Store } from "../src/core/ports.ts";
import { testJob } from "./helpers/fixtures.ts";

describe("decideMisfire", () => {
  const stored = [
    { id: "s1", scheduledAt: 1000 },
    { id: "s2", scheduledAt: 2000 },
  ];
  const computed = [3000, 4000, 5000];

  test("fire_once keeps the most recent instant only", () => {
    expect(decideMisfire("fire_once", 100, false, stored, computed)).toEqual({
      fireComputed: [5000],
      catchupStoredIds: [],
      skipStoredIds: ["s1", "s2"],
    });
  });

  test("fire_once keeps a stored firing when it is the most recent", () => {
    expect(decideMisfire("fire_once", 100, false, stored, [])).toEqual({
      fireComputed: [],
      catchupStoredIds: ["s2"],
      skipStoredIds: ["s1"],
    });
  });

  test("fire_all keeps the most recent max_catchup, oldest first", () => {
    expect(decideMisfire("fire_all", 4, false, stored, computed)).toEqual({
      fireComputed: [3000, 4000, 5000],
      catchupStoredIds: ["s2"],
      skipStoredIds: ["s1"],
    });
    expect(decideMisfire("fire_all", 100, false, stored, computed).skipStoredIds).toEqual([]);
  });

  test("skip fires nothing and drops every stored miss", () => {
    expect(decideMisfire("skip", 100, false, stored, computed)).toEqual({
      fireComputed: [],
      catchupStoredIds: [],
      skipStoredIds: ["s1", "s2"],
    });
  });

  test("one-shots treat fire_all as fire_once", () => {
    expect(decideMisfire("fire_all", 100, true, [], [7000]).fireComputed).toEqual([7000]);
  });

  test("a stored firing and its computed twin are one instant", () => {
    const d = decideMisfire("fire_all", 100, false, [{ id: "s", scheduledAt: 3000 }], [3000, 4000]);
    expect(d).toEqual({ fireComputed: [4000], catchupStoredIds: ["s"], skipStoredIds: [] });
  });
});

describe("Planner.planJob", () => {
  const clock = new VirtualClock(Date.parse("2027-01-01T12:00:00Z"));
  const planner = new Planner({} as Store, { onChange() {} } as unknown as Leader, clock, { ...DEFAULT_PLANNER_OPTIONS, horizonMs: 5_000, misfireThresholdMs: 60_000 }, () => {}, silentLogger);

  const job = (spec: Partial<JobSpec>, nextFireAt: number): Job =>
    testJob({ id: "j", ...spec }, { nextFireAt, anchorAt: Date.parse("2027-01-01T00:00:00Z") });
  const now = clock.now();

  test("on time: enqueues every instant within the horizon and advances next_fire_at past it", () => {
    const e = planner.planJob(job({}, now + 1000), now, []);
    expect(e.firings.map((f) => f.scheduledAt - now)).toEqual([1000, 2000, 3000, 4000, 5000]);
    expect(e.firings.every((f) => !f.catchup)).toBe(true);
    expect(e.nextFireAt).toBe(now + 6000);
    expect(e.lastFiredAt).toBe(now + 5000);
  });

  test("late within the threshold: missed instants still fire, late, not as catch-up", () => {
    const e = planner.planJob(job({}, now - 30_000), now, []);
    expect(e.firings[0]!.scheduledAt).toBe(now - 30_000);
    expect(e.firings.filter((f) => f.catchup)).toHaveLength(0);
  });

  test("beyond the threshold, fire_once: one catch-up for the latest instant, then the schedule", () => {
    const e = planner.planJob(job({}, now - 3_600_000), now, []);
    const catchup = e.firings.filter((f) => f.catchup).map((f) => f.scheduledAt);
    expect(catchup).toEqual([now]);
    expect(e.firings.filter((f) => !f.catchup).map((f) => f.scheduledAt - now)).toEqual([1000, 2000, 3000, 4000, 5000]);
  });

  test("beyond the threshold, fire_all: the latest max_catchup instants", () => {
    const e = planner.planJob(job({ misfire: { policy: "fire_all", max_catchup: 3 } }, now - 3_600_000), now, []);
    expect(e.firings.filter((f) => f.catchup).map((f) => f.scheduledAt - now)).toEqual([-2000, -1000, 0]);
  });

  test("beyond the threshold, skip: no catch-up, resumes at the next future instant", () => {
    const e = planner.planJob(job({ misfire: { policy: "skip", max_catchup: 100 } }, now - 3_600_000), now, [{ id: "old", scheduledAt: now - 3_600_000 }]);
    expect(e.firings.filter((f) => f.catchup)).toHaveLength(0);
    expect(e.firings[0]!.scheduledAt).toBe(now + 1000);
    expect(e.skipStoredIds).toEqual(["old"]);
  });

  test("a missed one-shot fires once as catch-up and is then exhausted", () => {
    const at = now - 120_000;
    const e = planner.planJob(job({ schedule: { at: new Date(at).toISOString() } }, at), now, []);
    expect(e.firings.map((f) => [f.scheduledAt, f.catchup])).toEqual([[at, true]]);
    expect(e.nextFireAt).toBeNull();
  });
});
