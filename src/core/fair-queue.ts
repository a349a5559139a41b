// Delivery order when capacity is short: priorities share it 6:3:1 (high:normal:low) by stride
// scheduling, a deterministic form of weighted fair queuing. Each class has a pass value; the
// non-empty class with the lowest pass goes next and its pass grows by 1/weight. A class that was
// idle re-enters at the current pass, so idleness earns no burst. Low still gets one turn in ten
// under any load, so it never starves; within a class, oldest first.

import type { Priority } from "./model.ts";

export const PRIORITY_WEIGHTS: Record<Priority, number> = { high: 6, normal: 3, low: 1 };
const ORDER: Priority[] = ["high", "normal", "low"];

export class FairQueue<T> {
  private readonly queues: Record<Priority, T[]> = { high: [], normal: [], low: [] };
  private readonly heads: Record<Priority, number> = { high: 0, normal: 0, low: 0 };
  private readonly pass: Record<Priority, number> = { high: 0, normal: 0, low: 0 };
  private now = 0;
  private count = 0;

  constructor(private readonly priorityOf: (item: T) => Priority) {}

  get size(): number {
    return this.count;
  }

  sizeOf(p: Priority): number {
    return this.queues[p].length - this.heads[p];
  }

  push(item: T): void {
    const p = this.priorityOf(item);
    if (this.sizeOf(p) === 0) this.pass[p] = Math.max(this.pass[p], this.now);
    this.queues[p].push(item);
    this.count++;
  }

  /** Puts items back at the front of their class (a batch that could not start). */
  unshift(items: T[]): void {
    for (const item of [...items].reverse()) {
      const p = this.priorityOf(item);
      if (this.heads[p] > 0) this.queues[p][--this.heads[p]] = item;
      else this.queues[p].unshift(item);
      this.count++;
    }
  }

  shift(): T | undefined {
    let best: Priority | null = null;
    for (const p of ORDER) {
      if (this.sizeOf(p) === 0) continue;
      if (best === null || this.pass[p] < this.pass[best]) best = p;
    }
    if (best === null) return undefined;
    const q = this.queues[best];
    const item = q[this.heads[best]++]!;
    this.count--;
    this.now = this.pass[best];
    this.pass[best] += 1 / PRIORITY_WEIGHTS[best];
    if (this.heads[best] > 1024 && this.heads[best] * 2 > q.length) {
      q.splice(0, this.heads[best]); // compact now and then; shifting every time would be O(n)
      this.heads[best] = 0;
    }
    return item;
  }

  take(n: number): T[] {
    const out: T[] = [];
    while (out.length < n) {
      const item = this.shift();
      if (item === undefined) break;
      out.push(item);
    }
    return out;
  }

  drain(): T[] {
    return this.take(this.count);
  }
}
