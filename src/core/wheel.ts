// A hierarchical timing wheel (Kafka's TimingWheel/advanceClock idea): O(1) add and cancel,
// and advance(nowMs) hands back what came due. A pure data structure that never reads a clock;
// a thin driver loop owns the real timer and sleeps until nextDueMs().

// Layout. Time is counted in ticks (floor(ms / tickMs)). Level l has `slots` buckets, each
// spanning slots^l ticks, so the wheel covers one "top block" of slots^levels ticks. An entry
// lives at the highest level at which its due tick and the current tick differ in base-`slots`
// digits, in the bucket of its own digit there. Its digit is always ahead of the current digit,
// so when the current tick enters that bucket's span the bucket is cascaded (re-placed one or more
// levels down), and a level-0 bucket is expired when the current tick reaches it. Entries outside
// the current top block wait in `overflow` until the current tick enters their top block.
// advance() jumps straight from one non-empty bucket to the next, so hours of empty virtual time
// cost a few steps, not one step per tick.

export interface TimingWheelOptions {
  /** Width of a level-0 bucket. Default 1 ms. */
  tickMs?: number;
  /** Buckets per level. Default 64. */
  slotsPerLevel?: number;
  /** Default 4: with the other defaults the wheel covers 64^4 ms (about 4.66 h) before overflow. */
  levels?: number;
}

export interface ExpiredEntry<T> {
  key: string;
  dueMs: number;
  value: T;
}

interface Entry<T> {
  key: string;
  dueMs: number;
  dueTick: number;
  value: T;
  /**
   * Insertion order, the tie-breaker between entries due at the same ms. Entries due in the
   * same tick always share a bucket, so bucket order already matches; seq keeps the output
   * order from resting on that.
   */
  seq: number;
  /** The Set holding the entry, so cancel is a single delete. */
  home: Set<Entry<T>>;
  /** PAST_LEVEL, a wheel level 0..levels-1, or `levels` for overflow. */
  level: number;
}

const PAST_LEVEL = -1;

export class TimingWheel<T> {
  private readonly tickMs: number;
  private readonly slots: number;
  private readonly levels: number;
  /** spans[l] = ticks covered by one level-l bucket; spans[levels] = one top block. */
  private readonly spans: number[];
  private readonly buckets: Array<Array<Set<Entry<T>>>>;
  /** Entries per level, so empty levels are skipped without looking at their buckets. */
  private readonly levelCounts: number[];
  /** Entries added with dueMs <= current time: returned by the next advance(). */
  private readonly past = new Set<Entry<T>>();
  private pastMinMs = Infinity;
  private readonly overflow = new Set<Entry<T>>();
  /** A lower bound on overflow due ticks; cancel may leave it stale-low, which is harmless. */
  private overflowMinTick = Infinity;
  private readonly byKey = new Map<string, Entry<T>>();
  private nowMs: number;
  private nowTick: number;
  private nextSeq = 0;
  private positions = 0;

  constructor(startMs: number, opts: TimingWheelOptions = {}) {
    const tickMs = opts.tickMs ?? 1;
    const slots = opts.slotsPerLevel ?? 64;
    const levels = opts.levels ?? 4;
    if (!(tickMs > 0) || !Number.isFinite(tickMs)) throw new RangeError(`tickMs must be > 0, got ${tickMs}`);
    if (!Number.isInteger(slots) || slots < 2) throw new RangeError(`slotsPerLevel must be an integer >= 2, got ${slots}`);
    if (!Number.isInteger(levels) || levels < 1) throw new RangeError(`levels must be an integer >= 1, got ${levels}`);
    if (!Number.isSafeInteger(slots ** levels)) throw new RangeError("slotsPerLevel ** levels is too large");
    if (!Number.isFinite(startMs)) throw new RangeError(`startMs must be finite, got ${startMs}`);
    this.tickMs = tickMs;
    this.slots = slots;
    this.levels = levels;
    this.spans = Array.from({ length: levels + 1 }, (_, l) => slots ** l);
    this.buckets = Array.from({ length: levels }, () => Array.from({ length: slots }, () => new Set<Entry<T>>()));
    this.levelCounts = new Array<number>(levels).fill(0);
    this.nowMs = startMs;
    this.nowTick = this.tickOf(startMs);
  }

  get size(): number {
    return this.byKey.size;
  }

  /** Diagnostic: wheel positions advance() has stepped to, so tests can check that empty time is skipped. */
  get positionsVisited(): number {
    return this.positions;
  }

  has(key: string): boolean {
    return this.byKey.has(key);
  }

  /** Re-adding a key replaces the old entry, and the new one counts as inserted now. */
  add(key: string, dueMs: number, value: T): void {
    if (!Number.isFinite(dueMs)) throw new RangeError(`dueMs must be finite, got ${dueMs} for ${key}`);
    const old = this.byKey.get(key);
    if (old !== undefined) this.detach(old);
    const entry: Entry<T> = {
      key,
      dueMs,
      dueTick: this.tickOf(dueMs),
      value,
      seq: this.nextSeq++,
      home: this.past,
      level: PAST_LEVEL,
    };
    this.byKey.set(key, entry);
    this.place(entry);
  }

  cancel(key: string): boolean {
    const entry = this.byKey.get(key);
    if (entry === undefined) return false;
    this.detach(entry);
    this.byKey.delete(key);
    return true;
  }

  /**
   * Returns every entry due at or before nowMs, by dueMs then insertion order. The wheel never
   * moves backwards: an earlier nowMs (a wall-clock step back) keeps the current time and
   * returns only what was already due.
   */
  advance(nowMs: number): ExpiredEntry<T>[] {
    if (Number.isNaN(nowMs)) throw new RangeError("advance(NaN)");
    const targetMs = Math.max(nowMs, this.nowMs);
    const targetTick = this.tickOf(targetMs);
    const expired: Entry<T>[] = [...this.past];
    this.past.clear();
    this.pastMinMs = Infinity;
    // Entries left in the current tick by an earlier advance that stopped mid-tick.
    this.visit(this.nowTick, targetMs, expired);
    for (;;) {
      const tick = this.nextPositionTick();
      if (tick > targetTick) break;
      this.nowTick = tick;
      this.positions++;
      this.visit(tick, targetMs, expired);
    }
    // Nothing lies between the last visited position and the target (that is what
    // nextPositionTick() just said), so the current tick can jump there directly.
    this.nowTick = targetTick;
    this.nowMs = targetMs;
    for (const entry of expired) this.byKey.delete(entry.key);
    expired.sort((a, b) => a.dueMs - b.dueMs || a.seq - b.seq);
    return expired.map(({ key, dueMs, value }) => ({ key, dueMs, value }));
  }

  /**
   * Earliest time at which advance() could return something; null when empty. Exact for
   * entries within the current level-0 span (and for past entries, whose due time may lie
   * before the current time); otherwise the start of the bucket that must be cascaded first,
   * which is never later than the true earliest due time.
   */
  nextDueMs(): number | null {
    if (this.byKey.size === 0) return null;
    const pastMs = this.past.size > 0 ? this.pastMinMs : Infinity;
    if (this.levelCounts[0]! > 0) {
      // Includes the current bucket, which may hold entries due later within this tick.
      const level0 = this.buckets[0]!;
      for (let digit = this.digit(this.nowTick, 0); digit < this.slots; digit++) {
        const bucket = level0[digit]!;
        if (bucket.size === 0) continue;
        let minMs = Infinity;
        for (const entry of bucket) minMs = Math.min(minMs, entry.dueMs);
        return Math.min(pastMs, minMs);
      }
    }
    const tick = this.nextPositionTick();
    return Math.min(pastMs, tick * this.tickMs);
  }

  /** The next tick after the current one at which a bucket must be expired or cascaded. */
  private nextPositionTick(): number {
    const c = this.nowTick;
    // Level l's buckets all lie inside the current level-(l+1) bucket, so a lower level's
    // next position always comes before a higher level's: the first hit is the answer.
    for (let l = 0; l < this.levels; l++) {
      if (this.levelCounts[l] === 0) continue;
      const level = this.buckets[l]!;
      for (let digit = this.digit(c, l) + 1; digit < this.slots; digit++) {
        if (level[digit]!.size > 0) return this.blockStart(c, l + 1) + digit * this.spans[l]!;
      }
    }
    if (this.overflow.size === 0) return Infinity;
    const top = this.spans[this.levels]!;
    return Math.max(this.blockStart(c, this.levels) + top, Math.floor(this.overflowMinTick / top) * top);
  }

  /** Cascades the buckets the current tick has just entered, then expires its level-0 bucket. */
  private visit(tick: number, targetMs: number, expired: Entry<T>[]): void {
    const top = this.spans[this.levels]!;
    if (this.overflow.size > 0 && Math.floor(this.overflowMinTick / top) <= Math.floor(tick / top)) {
      this.rescanOverflow(tick);
    }
    for (let l = this.levels - 1; l >= 1; l--) {
      if (this.levelCounts[l] === 0) continue;
      const bucket = this.buckets[l]![this.digit(tick, l)]!;
      if (bucket.size === 0) continue;
      const moving = [...bucket];
      bucket.clear();
      this.levelCounts[l]! -= moving.length;
      for (const entry of moving) this.place(entry);
    }
    const bucket = this.buckets[0]![this.digit(tick, 0)]!;
    for (const entry of bucket) {
      // Only the final tick of an advance can hold entries due after targetMs.
      if (entry.dueMs > targetMs) continue;
      bucket.delete(entry);
      this.levelCounts[0]!--;
      expired.push(entry);
    }
  }

  private rescanOverflow(tick: number): void {
    const top = this.spans[this.levels]!;
    const block = Math.floor(tick / top);
    let minTick = Infinity;
    for (const entry of this.overflow) {
      if (Math.floor(entry.dueTick / top) <= block) {
        this.overflow.delete(entry);
        this.place(entry);
      } else {
        minTick = Math.min(minTick, entry.dueTick);
      }
    }
    this.overflowMinTick = minTick;
  }

  /** Puts an entry where the current time says it belongs. */
  private place(entry: Entry<T>): void {
    if (entry.dueMs <= this.nowMs) {
      this.attach(entry, this.past, PAST_LEVEL);
      this.pastMinMs = Math.min(this.pastMinMs, entry.dueMs);
      return;
    }
    const c = this.nowTick;
    const d = entry.dueTick;
    if (d < c) {
      // Cascades happen before the current tick passes a bucket; landing here means that broke.
      throw new Error(`TimingWheel invariant broken: ${entry.key} due tick ${d} is behind current tick ${c}`);
    }
    for (let l = 0; l < this.levels; l++) {
      const span = this.spans[l + 1]!;
      if (Math.floor(d / span) === Math.floor(c / span)) {
        this.attach(entry, this.buckets[l]![this.digit(d, l)]!, l);
        this.levelCounts[l]!++;
        return;
      }
    }
    this.attach(entry, this.overflow, this.levels);
    this.overflowMinTick = Math.min(this.overflowMinTick, d);
  }

  private attach(entry: Entry<T>, home: Set<Entry<T>>, level: number): void {
    home.add(entry);
    entry.home = home;
    entry.level = level;
  }

  private detach(entry: Entry<T>): void {
    entry.home.delete(entry);
    if (entry.level >= 0 && entry.level < this.levels) this.levelCounts[entry.level]!--;
  }

  private tickOf(ms: number): number {
    return Math.floor(ms / this.tickMs);
  }

  /** Base-`slots` digit l of a tick; safe for negative ticks. */
  private digit(tick: number, l: number): number {
    const d = Math.floor(tick / this.spans[l]!) % this.slots;
    return d < 0 ? d + this.slots : d;
  }

  /** First tick of the aligned run of spans[l] ticks containing `tick` (a level-l bucket, or the top block). */
  private blockStart(tick: number, l: number): number {
    const span = this.spans[l]!;
    return Math.floor(tick / span) * span;
  }
}
