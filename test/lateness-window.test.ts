import { expect, test } from "bun:test";
import { LatenessWindow } from "../src/core/lateness-window.ts";

test("percentiles over the samples inside the window only", () => {
  const w = new LatenessWindow(1_000, 100);
  expect(w.percentiles(0)).toBeNull();
  for (let i = 1; i <= 100; i++) w.add(i, 10_000 + i); // lateness i ms at time 10000+i
  expect(w.percentiles(10_100)).toEqual({ p50: 50, p99: 99, count: 100 });
  // 1 s later the samples added before 10_050 have left the window.
  expect(w.percentiles(11_050)).toEqual({ p50: 75, p99: 100, count: 51 });
  expect(w.percentiles(20_000)).toBeNull();
});

test("when full, the oldest samples are overwritten first", () => {
  const w = new LatenessWindow(60_000, 10);
  for (let i = 1; i <= 25; i++) w.add(i, 1_000 + i);
  // Only the last 10 (16..25) are kept.
  expect(w.percentiles(2_000)).toEqual({ p50: 20, p99: 25, count: 10 });
  w.add(1_000, 2_001);
  expect(w.percentiles(2_001)).toEqual({ p50: 21, p99: 1_000, count: 10 });
});
