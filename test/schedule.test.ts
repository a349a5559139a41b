// Schedule semantics: exact firing instants around DST transitions (the SPEC policy), every/at
// windows, misfire look-back and validation messages. Instants are compared as ISO strings.
import { describe, expect, test } from "bun:test";
import { CronExpressionParser } from "cron-parser";
import { Temporal } from "@js-temporal/polyfill";
import type { Schedule } from "../src/core/model.ts";
import {
  compileSchedule,
  isWildcardCron,
  lastInstantsUpTo,
  parseEveryMs,
  parseInstantMs,
  previewTimes,
  validateSchedule,
} from "../src/core/schedule.ts";

const ms = (iso: string) => Date.parse(iso);
const iso = (ts: number[]) => ts.map((t) => new Date(t).toISOString().replace(".000Z", "Z"));
const preview = (s: Schedule, from: string, count: number, anchor = 0) => iso(previewTimes(s, anchor, ms(from), count));

type Case = [name: string, schedule: Schedule, from: string, count: number, expected: string[]];

function table(cases: Case[]) {
  for (const [name, s, from, count, expected] of cases) {
    test(name, () => expect(preview(s, from, count)).toEqual(expected));
  }
}

describe("the zone data the DST cases assume", () => {
  const transitions = (tz: string, from: string, n: number) => {
    const out: string[] = [];
    let z: Temporal.ZonedDateTime | null = Temporal.Instant.from(from).toZonedDateTimeISO(tz);
    for (let i = 0; i < n && z; i++) {
      z = z.getTimeZoneTransition("next");
      if (z) out.push(z.toString());
    }
    return out;
  };
  test("Europe/Berlin, America/New_York, Australia/Lord_Howe 2027", () => {
    expect(transitions("Europe/Berlin", "2027-01-01T00:00:00Z", 2)).toEqual([
      "2027-03-28T03:00:00+02:00[Europe/Berlin]",
      "2027-10-31T02:00:00+01:00[Europe/Berlin]",
    ]);
    expect(transitions("America/New_York", "2027-01-01T00:00:00Z", 2)).toEqual([
      "2027-03-14T03:00:00-04:00[America/New_York]",
      "2027-11-07T01:00:00-05:00[America/New_York]",
    ]);
    // Lord Howe moves by 30 minutes: back 02:00->01:30 (first Sunday of April), forward 02:00->02:30 (first Sunday of October).
    expect(transitions("Australia/Lord_Howe", "2027-01-01T00:00:00Z", 2)).toEqual([
      "2027-04-04T01:30:00+10:30[Australia/Lord_Howe]",
      "2027-10-03T02:30:00+11:00[Australia/Lord_Howe]",
    ]);
  });
});

describe("Europe/Berlin 2027: gap 03-28 02:00->03:00, overlap 10-31 03:00->02:00", () => {
  const berlin = (cron: string, extra: Partial<Schedule> = {}) => ({ cron, timezone: "Europe/Berlin", ...extra }) as Schedule;
  table([
    ["fixed 30 2 default shift: gap fires when clocks jump (03:00 local)", berlin("30 2 * * *"), "2027-03-26T12:00:00Z", 3,
      ["2027-03-27T01:30:00Z", "2027-03-28T01:00:00Z", "2027-03-29T00:30:00Z"]],
    ["fixed 30 2 skip: nothing on the gap day", berlin("30 2 * * *", { dst_gap: "skip" }), "2027-03-26T12:00:00Z", 3,
      ["2027-03-27T01:30:00Z", "2027-03-29T00:30:00Z", "2027-03-30T00:30:00Z"]],
    ["fixed 30 2 default first: only the earlier 02:30", berlin("30 2 * * *"), "2027-10-29T12:00:00Z", 3,
      ["2027-10-30T00:30:00Z", "2027-10-31T00:30:00Z", "2027-11-01T01:30:00Z"]],
    ["fixed 30 2 both: 02:30 CEST and 02:30 CET", berlin("30 2 * * *", { dst_overlap: "both" }), "2027-10-29T12:00:00Z", 4,
      ["2027-10-30T00:30:00Z", "2027-10-31T00:30:00Z", "2027-10-31T01:30:00Z", "2027-11-01T01:30:00Z"]],
    ["first: asked between the two 02:30s, the second is not fired", berlin("30 2 * * *"), "2027-10-31T00:45:00Z", 1,
      ["2027-11-01T01:30:00Z"]],
    ["both: asked between the two 02:30s, the second comes next", berlin("30 2 * * *", { dst_overlap: "both" }), "2027-10-31T00:45:00Z", 1,
      ["2027-10-31T01:30:00Z"]],
    ["0 2,3 shift on the gap day: 02:00 shifted and 03:00 are one firing", berlin("0 2,3 * * *"), "2027-03-27T12:00:00Z", 3,
      ["2027-03-28T01:00:00Z", "2027-03-29T00:00:00Z", "2027-03-29T01:00:00Z"]],
    ["wildcard */15 default skip: no 02:xx local firings", berlin("*/15 * * * *"), "2027-03-28T00:20:00Z", 5,
      ["2027-03-28T00:30:00Z", "2027-03-28T00:45:00Z", "2027-03-28T01:00:00Z", "2027-03-28T01:15:00Z", "2027-03-28T01:30:00Z"]],
    ["wildcard */15 default both: 02:00..02:45 twice = 8 instants", berlin("*/15 * * * *"), "2027-10-30T23:50:00Z", 9,
      ["2027-10-31T00:00:00Z", "2027-10-31T00:15:00Z", "2027-10-31T00:30:00Z", "2027-10-31T00:45:00Z",
        "2027-10-31T01:00:00Z", "2027-10-31T01:15:00Z", "2027-10-31T01:30:00Z", "2027-10-31T01:45:00Z",
        "2027-10-31T02:00:00Z"]],
    ["wildcard */15 with first: the repeated 02:xx are fired once", berlin("*/15 * * * *", { dst_overlap: "first" }), "2027-10-30T23:50:00Z", 5,
      ["2027-10-31T00:00:00Z", "2027-10-31T00:15:00Z", "2027-10-31T00:30:00Z", "2027-10-31T00:45:00Z", "2027-10-31T02:00:00Z"]],
    ["hourly 0 * default: 01:00 CET then 03:00 CEST", berlin("0 * * * *"), "2027-03-27T23:30:00Z", 3,
      ["2027-03-28T00:00:00Z", "2027-03-28T01:00:00Z", "2027-03-28T02:00:00Z"]],
    ["hourly 0 * default: 02:00 twice at the overlap", berlin("0 * * * *"), "2027-10-30T23:30:00Z", 3,
      ["2027-10-31T00:00:00Z", "2027-10-31T01:00:00Z", "2027-10-31T02:00:00Z"]],
    ["@hourly is wildcard, same as 0 *", berlin("@hourly"), "2027-10-30T23:30:00Z", 3,
      ["2027-10-31T00:00:00Z", "2027-10-31T01:00:00Z", "2027-10-31T02:00:00Z"]],
    ["* 2 default skip: no firing at all on the gap day", berlin("* 2 * * *"), "2027-03-27T01:58:30Z", 3,
      ["2027-03-27T01:59:00Z", "2027-03-29T00:00:00Z", "2027-03-29T00:01:00Z"]],
    ["* 2 with shift: sixty gap minutes become one firing at 03:00", berlin("* 2 * * *", { dst_gap: "shift" }), "2027-03-27T01:58:30Z", 3,
      ["2027-03-27T01:59:00Z", "2027-03-28T01:00:00Z", "2027-03-29T00:00:00Z"]],
  ]);
});

describe("America/New_York 2027: gap 03-14 02:00->03:00, overlap 11-07 02:00->01:00", () => {
  const ny = (cron: string, extra: Partial<Schedule> = {}) => ({ cron, timezone: "America/New_York", ...extra }) as Schedule;
  table([
    ["30 2 shift", ny("30 2 * * *"), "2027-03-13T12:00:00Z", 3, ["2027-03-14T07:00:00Z", "2027-03-15T06:30:00Z", "2027-03-16T06:30:00Z"]],
    ["30 2 skip", ny("30 2 * * *", { dst_gap: "skip" }), "2027-03-13T12:00:00Z", 2, ["2027-03-15T06:30:00Z", "2027-03-16T06:30:00Z"]],
    ["30 1 first", ny("30 1 * * *"), "2027-11-06T12:00:00Z", 2, ["2027-11-07T05:30:00Z", "2027-11-08T06:30:00Z"]],
    ["30 1 both", ny("30 1 * * *", { dst_overlap: "both" }), "2027-11-06T12:00:00Z", 3,
      ["2027-11-07T05:30:00Z", "2027-11-07T06:30:00Z", "2027-11-08T06:30:00Z"]],
    ["hourly across the gap", ny("0 * * * *"), "2027-03-14T04:30:00Z", 4,
      ["2027-03-14T05:00:00Z", "2027-03-14T06:00:00Z", "2027-03-14T07:00:00Z", "2027-03-14T08:00:00Z"]],
    ["hourly across the overlap: 01:00 EDT and 01:00 EST", ny("0 * * * *"), "2027-11-07T03:30:00Z", 4,
      ["2027-11-07T04:00:00Z", "2027-11-07T05:00:00Z", "2027-11-07T06:00:00Z", "2027-11-07T07:00:00Z"]],
  ]);
});

describe("Australia/Lord_Howe 2027: 30-minute transitions", () => {
  const lh = (cron: string, extra: Partial<Schedule> = {}) => ({ cron, timezone: "Australia/Lord_Howe", ...extra }) as Schedule;
  table([
    // Gap 2027-10-03 02:00 (+10:30) -> 02:30 (+11:00), at 2027-10-02T15:30Z.
    ["*/15 default skip: 02:00 and 02:15 do not exist", lh("*/15 * * * *"), "2027-10-02T15:00:00Z", 3,
      ["2027-10-02T15:15:00Z", "2027-10-02T15:30:00Z", "2027-10-02T15:45:00Z"]],
    ["15 2 shift: fires at 02:30 local", lh("15 2 * * *"), "2027-10-01T12:00:00Z", 3,
      ["2027-10-01T15:45:00Z", "2027-10-02T15:30:00Z", "2027-10-03T15:15:00Z"]],
    ["15 2 skip", lh("15 2 * * *", { dst_gap: "skip" }), "2027-10-01T12:00:00Z", 2, ["2027-10-01T15:45:00Z", "2027-10-03T15:15:00Z"]],
    // Overlap 2027-04-04 02:00 (+11:00) -> 01:30 (+10:30), at 2027-04-03T15:00Z.
    ["*/15 default both: 01:30 and 01:45 twice", lh("*/15 * * * *"), "2027-04-03T14:20:00Z", 5,
      ["2027-04-03T14:30:00Z", "2027-04-03T14:45:00Z", "2027-04-03T15:00:00Z", "2027-04-03T15:15:00Z", "2027-04-03T15:30:00Z"]],
    ["45 1 first", lh("45 1 * * *"), "2027-04-03T00:00:00Z", 2, ["2027-04-03T14:45:00Z", "2027-04-04T15:15:00Z"]],
    ["45 1 both", lh("45 1 * * *", { dst_overlap: "both" }), "2027-04-03T00:00:00Z", 3,
      ["2027-04-03T14:45:00Z", "2027-04-03T15:15:00Z", "2027-04-04T15:15:00Z"]],
  ]);
});

describe("matches a brute-force reference minute by minute around every 2027 transition", () => {
  // Reference: walk instants minute by minute, convert each to local wall time with Temporal and ask
  // cron-parser (in UTC, on the wall time) whether it matches; a wall time seen before is a repeat.
  const zones = ["Europe/Berlin", "America/New_York", "Australia/Lord_Howe"];
  const crons = ["*/15 * * * *", "30 2 * * *", "0 2,3 * * *", "* 2 * * *", "45 1 * * *"];
  const policies = [["shift", "first"], ["shift", "both"], ["skip", "first"], ["skip", "both"]] as const;
  for (const tz of zones) {
    test(tz, () => {
      let z: Temporal.ZonedDateTime | null = Temporal.Instant.from("2027-01-01T00:00:00Z").toZonedDateTimeISO(tz);
      for (let k = 0; k < 2; k++) {
        z = z!.getTimeZoneTransition("next");
        const T = z!.epochMilliseconds;
        const walls: [number, number][] = []; // [instant, wall as if UTC]
        for (let t = T - 26 * 3_600_000; t <= T + 26 * 3_600_000; t += 60_000) {
          walls.push([t, t + Temporal.Instant.fromEpochMilliseconds(t).toZonedDateTimeISO(tz).offsetNanoseconds / 1e6]);
        }
        const before = walls.find(([t]) => t === T - 60_000)!, after = walls.find(([t]) => t === T)!;
        const gap: [number, number] = [before[1] + 60_000, after[1]]; // empty unless clocks jump forward
        for (const cron of crons) {
          const expr = CronExpressionParser.parse(cron, { tz: "UTC" });
          for (const [dst_gap, dst_overlap] of policies) {
            const expected = new Set<number>();
            const seen = new Set<number>();
            for (const [t, w] of walls) {
              if (expr.includesDate(new Date(w)) && !(seen.has(w) && dst_overlap === "first")) expected.add(t);
              seen.add(w);
            }
            for (let w = gap[0]; w < gap[1] && dst_gap === "shift"; w += 60_000) if (expr.includesDate(new Date(w))) expected.add(T);
            const from = walls[0]![0] - 1, to = walls[walls.length - 1]![0];
            const got = previewTimes({ cron, timezone: tz, dst_gap, dst_overlap }, 0, from, 500).filter((t) => t <= to);
            expect([tz, cron, dst_gap, dst_overlap, iso(got)]).toEqual([tz, cron, dst_gap, dst_overlap, iso([...expected].sort((a, b) => a - b))]);
          }
        }
      }
    });
  }
});

describe("zones without DST", () => {
  table([
    ["Asia/Tokyo every minute across local midnight", { cron: "* * * * *", timezone: "Asia/Tokyo" }, "2027-01-01T14:58:00Z", 3,
      ["2027-01-01T14:59:00Z", "2027-01-01T15:00:00Z", "2027-01-01T15:01:00Z"]],
    ["Asia/Tokyo 0 9 daily", { cron: "0 9 * * *", timezone: "Asia/Tokyo" }, "2027-03-27T00:00:00Z", 3,
      ["2027-03-28T00:00:00Z", "2027-03-29T00:00:00Z", "2027-03-30T00:00:00Z"]],
    ["UTC 0 9 daily", { cron: "0 9 * * *", timezone: "UTC" }, "2027-10-30T09:00:00Z", 3,
      ["2027-10-31T09:00:00Z", "2027-11-01T09:00:00Z", "2027-11-02T09:00:00Z"]],
    ["UTC every minute across midnight", { cron: "* * * * *", timezone: "UTC" }, "2027-12-31T23:58:30Z", 3,
      ["2027-12-31T23:59:00Z", "2028-01-01T00:00:00Z", "2028-01-01T00:01:00Z"]],
    ["6 fields: every second, 1 s apart, fractional start", { cron: "* * * * * *", timezone: "Europe/Berlin" }, "2027-03-28T00:59:58.250Z", 5,
      ["2027-03-28T00:59:59Z", "2027-03-28T01:00:00Z", "2027-03-28T01:00:01Z", "2027-03-28T01:00:02Z", "2027-03-28T01:00:03Z"]],
    ["6 fields: seconds list", { cron: "10,40 0 12 * * *", timezone: "UTC" }, "2027-06-01T00:00:00Z", 3,
      ["2027-06-01T12:00:10Z", "2027-06-01T12:00:40Z", "2027-06-02T12:00:10Z"]],
    ["leap day only", { cron: "0 0 29 2 *", timezone: "UTC" }, "2027-01-01T00:00:00Z", 2, ["2028-02-29T00:00:00Z", "2032-02-29T00:00:00Z"]],
  ]);
});

describe("agrees with cron-parser in UTC (day-of-month/day-of-week rules, L, #)", () => {
  const exprs = ["0 0 L * *", "0 0 * * 5L", "0 0 * * 1#2", "0 0 15 * 1", "0 0 1-31 * 1", "0 0 */5 * 0,6", "30 4 * 2 *",
    "0 0 29 2 *", "*/7 5-10/2 3 * * *", "0 12 1,L * *", "0 0 * * 7", "0 0 ? * MON-FRI", "0 0 8-14 * 2"];
  for (const e of exprs) {
    test(e, () => {
      const from = ms("2027-01-01T00:00:00Z");
      const theirs = CronExpressionParser.parse(e, { tz: "UTC", currentDate: new Date(from) }).take(60).map((d) => d.getTime());
      expect(iso(previewTimes({ cron: e, timezone: "UTC" }, 0, from, 60))).toEqual(iso(theirs));
    });
  }
});

test("next() is cheap: every-second cron in Europe/Berlin", () => {
  const c = compileSchedule({ cron: "* * * * * *", timezone: "Europe/Berlin" }, 0);
  let t = ms("2027-03-27T00:00:00Z");
  const t0 = performance.now();
  for (let i = 0; i < 50_000; i++) t = c.next(t)!;
  const usPerCall = ((performance.now() - t0) * 1000) / 50_000;
  expect(iso([t])).toEqual(["2027-03-27T13:53:20Z"]);
  expect(usPerCall).toBeLessThan(20); // measured ~0.25 µs
});

describe("every and at", () => {
  const anchor = ms("2027-01-01T00:00:00Z");
  test("every 15m is anchor + k*15m, k >= 0", () => {
    const c = compileSchedule({ every: "15m" }, anchor);
    expect(iso([c.next(anchor - 1)!, c.next(anchor)!, c.next(anchor + 7 * 60_000)!, c.next(anchor + 15 * 60_000)!])).toEqual(
      ["2027-01-01T00:00:00Z", "2027-01-01T00:15:00Z", "2027-01-01T00:15:00Z", "2027-01-01T00:30:00Z"]);
  });
  test("every 15m within start_at/end_at (inclusive)", () => {
    const s = { every: "15m", start_at: "2027-01-01T01:00:00Z", end_at: "2027-01-01T02:00:00Z" };
    expect(preview(s, "2026-12-31T00:00:00Z", 10, ms(s.start_at))).toEqual(
      ["2027-01-01T01:00:00Z", "2027-01-01T01:15:00Z", "2027-01-01T01:30:00Z", "2027-01-01T01:45:00Z", "2027-01-01T02:00:00Z"]);
    // An anchor off the window's grid keeps its own phase.
    expect(preview(s, "2026-12-31T00:00:00Z", 2, anchor + 7 * 60_000)).toEqual(["2027-01-01T01:07:00Z", "2027-01-01T01:22:00Z"]);
    expect(compileSchedule(s, ms(s.start_at)).next(ms(s.end_at))).toBeNull();
  });
  test("cron within start_at/end_at", () => {
    const s = { cron: "0 * * * *", timezone: "UTC", start_at: "2027-01-01T10:30:00Z", end_at: "2027-01-01T13:00:00Z" };
    expect(preview(s, "2027-01-01T00:00:00Z", 10)).toEqual(["2027-01-01T11:00:00Z", "2027-01-01T12:00:00Z", "2027-01-01T13:00:00Z"]);
  });
  test("at fires once, then null; an at in the past is null", () => {
    const c = compileSchedule({ at: "2027-05-01T12:00:00+02:00" }, 0);
    const t = c.next(ms("2027-01-01T00:00:00Z"));
    expect(iso([t!])).toEqual(["2027-05-01T10:00:00Z"]);
    expect(c.next(t!)).toBeNull();
    expect(c.next(ms("2027-06-01T00:00:00Z"))).toBeNull();
    expect(compileSchedule({ at: "2027-05-01T10:00:00Z", end_at: "2027-04-01T00:00:00Z" }, 0).next(0)).toBeNull();
  });
});

describe("lastInstantsUpTo", () => {
  test("hourly cron, inclusive bounds", () => {
    const c = compileSchedule({ cron: "0 * * * *", timezone: "UTC" }, 0);
    const [from, to] = [ms("2027-01-01T10:00:00Z"), ms("2027-01-01T13:00:00Z")];
    expect(iso(lastInstantsUpTo(c, from, to, 10))).toEqual(
      ["2027-01-01T10:00:00Z", "2027-01-01T11:00:00Z", "2027-01-01T12:00:00Z", "2027-01-01T13:00:00Z"]);
    expect(iso(lastInstantsUpTo(c, from, to, 2))).toEqual(["2027-01-01T12:00:00Z", "2027-01-01T13:00:00Z"]);
    expect(lastInstantsUpTo(c, ms("2027-01-01T10:00:01Z"), ms("2027-01-01T10:59:59Z"), 5)).toEqual([]);
  });
  test("3 days of an every-second cron, limit 100: the last 100, quickly", () => {
    const c = compileSchedule({ cron: "* * * * * *", timezone: "Europe/Berlin" }, 0);
    const to = ms("2027-03-29T00:00:00Z");
    const t0 = performance.now();
    const got = lastInstantsUpTo(c, ms("2027-03-26T00:00:00Z"), to, 100);
    expect(performance.now() - t0).toBeLessThan(100);
    expect(got).toEqual(Array.from({ length: 100 }, (_, i) => to - (99 - i) * 1000));
  });
  test("sparse schedule over years; every schedule", () => {
    const yearly = compileSchedule({ cron: "0 0 1 1 *", timezone: "Europe/Berlin" }, 0);
    expect(iso(lastInstantsUpTo(yearly, ms("2000-01-01T00:00:00Z"), ms("2027-06-01T00:00:00Z"), 2))).toEqual(
      ["2025-12-31T23:00:00Z", "2026-12-31T23:00:00Z"]);
    const every = compileSchedule({ every: "7s" }, ms("2027-01-01T00:00:00Z"));
    expect(iso(lastInstantsUpTo(every, ms("2027-01-01T00:00:00Z"), ms("2027-01-03T00:00:00Z"), 3))).toEqual(
      ["2027-01-02T23:59:41Z", "2027-01-02T23:59:48Z", "2027-01-02T23:59:55Z"]);
  });
});

describe("parsing and validation", () => {
  test("parseEveryMs", () => {
    expect(["1ms", "10s", "15m", "2h", "1d", "0s", "5x", "-1m", "1.5s", " 5s", "s", "99999999999999999d"].map(parseEveryMs)).toEqual(
      [1, 10_000, 900_000, 7_200_000, 86_400_000, null, null, null, null, null, null, null]);
  });
  test("parseInstantMs is strict RFC 3339", () => {
    expect(parseInstantMs("2027-01-01T10:00:00Z")).toBe(ms("2027-01-01T10:00:00Z"));
    expect(parseInstantMs("2027-01-01T10:00:00.123456+02:00")).toBe(ms("2027-01-01T08:00:00.123Z"));
    expect(parseInstantMs("2028-02-29t23:59:59-00:30")).toBe(ms("2028-03-01T00:29:59Z"));
    for (const bad of ["2027-01-01 10:00", "2027-01-01T10:00:00", "2027-01-01T10:00Z", "2027-02-29T00:00:00Z",
      "2027-04-31T00:00:00Z", "2027-13-01T00:00:00Z", "2027-01-01T24:00:00Z", "2027-01-01T10:00:00+0200", "tomorrow"]) {
      expect([bad, parseInstantMs(bad)]).toEqual([bad, null]);
    }
  });
  test("isWildcardCron", () => {
    const cases: [string, boolean][] = [["*/15 * * * *", true], ["* 2 * * *", true], ["@hourly", true], ["0 * * * *", true],
      ["30 2 * * *", false], ["@daily", false], ["0 9 * * 1-5", false], ["* 30 2 * * *", false], ["0 */5 2 * * *", true]];
    expect(cases.map(([e]) => [e, isWildcardCron(e)])).toEqual(cases);
  });
  const bad: [Schedule, RegExp][] = [
    [{ cron: "61 * * * *", timezone: "UTC" }, /minute field "61".*0-59/],
    [{ cron: "* * * *", timezone: "UTC" }, /expected 5 fields.*got 4/],
    [{ cron: "* * * * * * *", timezone: "UTC" }, /expected 5 fields.*got 7/],
    [{ cron: "0 0 30 2 *", timezone: "UTC" }, /never fires/],
    [{ cron: "0 H * * *", timezone: "UTC" }, /hashed/],
    [{ cron: "0 9 * * *", timezone: "Mars/Olympus" }, /unknown time zone "Mars\/Olympus"/],
    [{ cron: "0 9 * * *", timezone: "+02:00" }, /fixed UTC offset/],
    [{ cron: "0 9 * * *", timezone: "UTC", dst_gap: "later" as never }, /dst_gap/],
    [{ every: "0s" }, /every must be/],
    [{ every: "5x" }, /every must be/],
    [{ every: "-1m" }, /every must be/],
    [{ at: "2027-01-01 10:00" }, /at must be an RFC 3339 instant/],
    [{ every: "1m", start_at: "2027-02-01T00:00:00Z", end_at: "2027-01-01T00:00:00Z" }, /start_at .* is after end_at/],
    [{ every: "1m", end_at: "soon" }, /end_at must be an RFC 3339/],
    [{ every: "1m", cron: "* * * * *" } as never, /exactly one of at, cron or every/],
  ];
  for (const [s, re] of bad) test(`rejects ${JSON.stringify(s)}`, () => expect(validateSchedule(s) ?? "").toMatch(re));
  test("accepts valid schedules", () => {
    const good: Schedule[] = [
      { cron: "0 9 * * *", timezone: "Europe/Berlin" },
      { cron: "*/10 * * * * *", timezone: "America/New_York", dst_gap: "shift", dst_overlap: "both" },
      { cron: "@weekly", timezone: "UTC" },
      { cron: "0 0 L * *", timezone: "Australia/Lord_Howe" },
      { cron: "0 0 * * THU", timezone: "Asia/Tokyo" },
      { at: "2027-01-01T10:00:00+02:00" },
      { every: "15m", start_at: "2027-01-01T00:00:00Z", end_at: "2027-01-01T00:00:00Z" },
    ];
    expect(good.map(validateSchedule)).toEqual(good.map(() => null));
  });
});
