// Retry policy tables: exact delays with injected randomness, the max and Retry-After caps,
// every Retry-After form RFC 9110 asks recipients to accept, and which statuses retry.

import { describe, expect, test } from "bun:test";
import {
  isRetryableStatus,
  parseRetryAfterMs,
  RETRY_AFTER_CAP_MS,
  retryDelayMs,
  type BackoffPolicy,
} from "../src/core/backoff.ts";

const policy: BackoffPolicy = { initial_backoff_ms: 1_000, max_backoff_ms: 60_000 };
const fixed = (value: number) => () => value;

describe("retryDelayMs", () => {
  const cases: Array<[attempt: number, random: number, expectedMs: number]> = [
    [1, 0, 500],
    [1, 0.5, 750],
    [1, 1, 1_000],
    [2, 0, 1_000],
    [2, 0.5, 1_500],
    [2, 1, 2_000],
    [3, 0.5, 3_000],
    [6, 1, 32_000],
    [7, 0, 30_000], // base 64 s capped to 60 s
    [7, 0.5, 45_000],
    [7, 1, 60_000],
    [40, 1, 60_000],
    [10_000, 0.5, 45_000], // 2^9999 must not turn into Infinity or NaN
  ];
  for (const [attempt, random, expectedMs] of cases) {
    test(`attempt ${attempt}, random ${random} -> ${expectedMs} ms`, () => {
      expect(retryDelayMs(attempt, policy, fixed(random))).toBe(expectedMs);
    });
  }

  test("rounds to whole milliseconds", () => {
    expect(retryDelayMs(1, { initial_backoff_ms: 3, max_backoff_ms: 10 }, fixed(0))).toBe(2); // 1.5
    expect(retryDelayMs(1, { initial_backoff_ms: 3, max_backoff_ms: 10 }, fixed(0.3))).toBe(2); // 1.95
  });

  test("a zero initial backoff stays zero", () => {
    expect(retryDelayMs(100, { initial_backoff_ms: 0, max_backoff_ms: 10 }, fixed(1))).toBe(0);
  });

  test("Retry-After lengthens the delay but never shortens it", () => {
    expect(retryDelayMs(1, policy, fixed(0), 5_000)).toBe(5_000);
    expect(retryDelayMs(7, policy, fixed(1), 5_000)).toBe(60_000);
    expect(retryDelayMs(1, policy, fixed(0.5), 0)).toBe(750);
  });

  test("Retry-After is capped at one hour", () => {
    expect(RETRY_AFTER_CAP_MS).toBe(3_600_000);
    expect(retryDelayMs(1, policy, fixed(0), 86_400_000)).toBe(3_600_000);
    expect(retryDelayMs(1, policy, fixed(0), Infinity)).toBe(3_600_000);
  });

  test("the cap bounds Retry-After only, not a policy that asks for longer", () => {
    const slow: BackoffPolicy = { initial_backoff_ms: 2 * 3_600_000, max_backoff_ms: 2 * 3_600_000 };
    expect(retryDelayMs(1, slow, fixed(1), 10 * 3_600_000)).toBe(2 * 3_600_000);
  });

  test("rejects a bad attempt number or policy", () => {
    expect(() => retryDelayMs(0, policy, fixed(0))).toThrow(RangeError);
    expect(() => retryDelayMs(1.5, policy, fixed(0))).toThrow(RangeError);
    expect(() => retryDelayMs(1, { initial_backoff_ms: -1, max_backoff_ms: 10 }, fixed(0))).toThrow(RangeError);
    expect(() => retryDelayMs(1, { initial_backoff_ms: 1, max_backoff_ms: Number.NaN }, fixed(0))).toThrow(RangeError);
  });
});

describe("parseRetryAfterMs", () => {
  const nowMs = Date.UTC(2026, 2, 15, 12, 0, 0); // Sun, 15 Mar 2026 12:00:00 GMT

  test("delta-seconds", () => {
    expect(parseRetryAfterMs("120", nowMs)).toBe(120_000);
    expect(parseRetryAfterMs("0", nowMs)).toBe(0);
    expect(parseRetryAfterMs(" 7 ", nowMs)).toBe(7_000);
  });

  test("HTTP-date in all three accepted formats", () => {
    expect(parseRetryAfterMs("Sun, 15 Mar 2026 12:00:30 GMT", nowMs)).toBe(30_000);
    expect(parseRetryAfterMs("Sunday, 15-Mar-26 12:01:00 GMT", nowMs)).toBe(60_000);
    expect(parseRetryAfterMs("Sun Mar 15 12:00:05 2026", nowMs)).toBe(5_000);
    expect(parseRetryAfterMs("Mon Mar  2 12:00:00 2026", Date.UTC(2026, 2, 2, 11, 0, 0))).toBe(3_600_000);
    expect(parseRetryAfterMs("sun, 15 mar 2026 13:00:00 gmt", nowMs)).toBe(3_600_000);
  });

  test("a date in the past gives 0, never a negative delay", () => {
    expect(parseRetryAfterMs("Sun, 15 Mar 2026 11:59:00 GMT", nowMs)).toBe(0);
    expect(parseRetryAfterMs("Sun, 06 Nov 1994 08:49:37 GMT", nowMs)).toBe(0);
  });

  test("absent or invalid gives undefined", () => {
    const invalid = [
      null,
      "",
      "   ",
      "-5",
      "1.5",
      "1e3",
      "soon",
      "Sun, 31 Feb 2026 12:00:00 GMT",
      "Sun, 15 Mar 2026 25:00:00 GMT",
      "Sun, 15 Mar 2026 12:00:00 PST",
      "Sun, 15 Foo 2026 12:00:00 GMT",
      "2026-03-15T12:00:30Z",
      "15 Mar 2026",
    ];
    for (const header of invalid) expect(parseRetryAfterMs(header, nowMs)).toBeUndefined();
  });
});

describe("isRetryableStatus", () => {
  test("408, 429 and 5xx retry; everything else does not", () => {
    for (const status of [408, 429, 500, 502, 503, 504, 599]) expect(isRetryableStatus(status)).toBe(true);
    for (const status of [200, 204, 301, 400, 401, 403, 404, 409, 410, 422, 600]) {
      expect(isRetryableStatus(status)).toBe(false);
    }
  });
});
