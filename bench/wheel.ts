// Micro-benchmark for TimingWheel: 100,000 entries spread over 5 minutes, then drained the way
// a driver would (1 ms steps, and jumps straight to nextDueMs). Prints rates; asserts nothing.
// Run: npx bun bench/wheel.ts

import { TimingWheel } from "../src/core/wheel.ts";

const ENTRIES = 100_000;
const SPREAD_MS = 5 * 60_000;
const START_MS = 1_767_225_600_000;

function rate(count: number, ms: number): string {
  return `${Math.round((count / ms) * 1000).toLocaleString("en-US")}/s`;
}

function fill(wheel: TimingWheel<number>, dues: number[]): number {
  const t0 = performance.now();
  for (let i = 0; i < dues.length; i++) wheel.add(`job-${i}`, dues[i]!, i);
  return performance.now() - t0;
}

// Seeded (mulberry32) so runs are comparable.
let seed = 12345;
const random = (): number => {
  seed = (seed + 0x6d2b79f5) >>> 0;
  let t = Math.imul(seed ^ (seed >>> 15), seed | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const dues = Array.from({ length: ENTRIES }, () => START_MS + Math.floor(random() * SPREAD_MS));
const keys = Array.from({ length: ENTRIES }, (_, i) => `job-${i}`);

{
  const wheel = new TimingWheel<number>(START_MS);
  const addMs = fill(wheel, dues);
  console.log(`add:              ${ENTRIES} entries in ${addMs.toFixed(1)} ms  (${rate(ENTRIES, addMs)})`);

  const t0 = performance.now();
  let expired = 0;
  let calls = 0;
  for (let now = START_MS; now <= START_MS + SPREAD_MS; now++) {
    expired += wheel.advance(now).length;
    calls++;
  }
  const advMs = performance.now() - t0;
  console.log(
    `advance (1 ms):   ${calls} calls, ${expired} expired in ${advMs.toFixed(1)} ms  ` +
      `(${rate(calls, advMs)} calls, ${rate(expired, advMs)} entries)`,
  );
}

{
  const wheel = new TimingWheel<number>(START_MS);
  fill(wheel, dues);
  const t0 = performance.now();
  let expired = 0;
  let calls = 0;
  for (let next = wheel.nextDueMs(); next !== null; next = wheel.nextDueMs()) {
    expired += wheel.advance(next).length;
    calls++;
  }
  const advMs = performance.now() - t0;
  console.log(
    `advance (driver): ${calls} calls, ${expired} expired in ${advMs.toFixed(1)} ms  ` +
      `(${rate(expired, advMs)} entries, nextDueMs included)`,
  );
}

{
  const wheel = new TimingWheel<number>(START_MS);
  fill(wheel, dues);
  const t0 = performance.now();
  for (const key of keys) wheel.cancel(key);
  const cancelMs = performance.now() - t0;
  console.log(`cancel:           ${ENTRIES} entries in ${cancelMs.toFixed(1)} ms  (${rate(ENTRIES, cancelMs)})`);
}

{
  const wheel = new TimingWheel<number>(START_MS);
  wheel.add("daily", START_MS + 24 * 3_600_000, 0);
  const t0 = performance.now();
  let expired = 0;
  for (let now = START_MS; now <= START_MS + 24 * 3_600_000; now += 1_000) expired += wheel.advance(now).length;
  const idleMs = performance.now() - t0;
  console.log(`idle 24 h:        86,401 one-second advances, ${expired} expired in ${idleMs.toFixed(1)} ms`);
}
