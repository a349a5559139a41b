// Time as an input: every component takes a Clock instead of reading Date.now()/setTimeout,
// so production runs on the system clock and tests and simulations run on a VirtualClock
// that only moves when told to, firing due timers in a deterministic order.

export interface Clock {
  /** Wall time, epoch ms. May jump (NTP steps); use it for schedules, never for durations. */
  now(): number;
  /** Monotonic ms from an arbitrary origin; use it for durations, timeouts and leases. */
  monoNow(): number;
  /** Runs `fn` once after `delayMs` (negative counts as 0). Returns an idempotent cancel. */
  setTimer(delayMs: number, fn: () => void): () => void;
  /** Resolves after `ms`; rejects with `signal.reason` if the signal aborts first (or already has). */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** One sleep implementation for both clocks, so abort semantics cannot drift apart. */
function sleepOn(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = (): void => {
      cancel();
      reject(signal?.reason);
    };
    const cancel = clock.setTimer(ms, () => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    });
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

// setTimeout treats delays above 2^31-1 ms (~24.8 days) as 1 ms, so a far-future timer
// would fire at once; longer delays are split into chained timers instead.
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

function systemSetTimer(delayMs: number, fn: () => void): () => void {
  let handle: ReturnType<typeof setTimeout> | undefined;
  let cancelled = false;
  const arm = (remainingMs: number): void => {
    const stepMs = Math.min(Math.max(0, remainingMs), MAX_TIMEOUT_MS);
    handle = setTimeout(() => {
      if (cancelled) return;
      if (remainingMs > MAX_TIMEOUT_MS) arm(remainingMs - MAX_TIMEOUT_MS);
      else fn();
    }, stepMs);
  };
  arm(Number.isFinite(delayMs) ? delayMs : 0);
  return () => {
    cancelled = true;
    if (handle !== undefined) clearTimeout(handle);
  };
}

export const systemClock: Clock = {
  now: () => Date.now(),
  monoNow: () => performance.now(),
  setTimer: systemSetTimer,
  sleep(ms, signal) {
    return sleepOn(systemClock, ms, signal);
  },
};

interface VirtualTimer {
  dueMs: number; // in monotonic ms
  seq: number; // insertion order breaks ties between timers due at the same instant
  fn: () => void;
  cancelled: boolean;
}

function earlier(a: VirtualTimer, b: VirtualTimer): boolean {
  return a.dueMs < b.dueMs || (a.dueMs === b.dueMs && a.seq < b.seq);
}

/**
 * A clock that only moves on advance()/advanceTo(). Wall and monotonic time move together;
 * monotonic time starts at 0. Concurrent advance calls are queued, so a timer callback must
 * not await an advance of its own clock (it would wait for itself).
 */
export class VirtualClock implements Clock {
  private readonly startMs: number;
  private elapsedMs = 0;
  private nextSeq = 0;
  // Binary min-heap on (dueMs, seq); cancelled timers are dropped lazily when they surface.
  private readonly heap: VirtualTimer[] = [];
  private liveTimers = 0;
  private queue: Promise<void> = Promise.resolve();

  constructor(startMs = 0) {
    this.startMs = startMs;
  }

  now(): number {
    return this.startMs + this.elapsedMs;
  }

  monoNow(): number {
    return this.elapsedMs;
  }

  setTimer(delayMs: number, fn: () => void): () => void {
    const delay = Number.isFinite(delayMs) && delayMs > 0 ? delayMs : 0;
    const timer: VirtualTimer = { dueMs: this.elapsedMs + delay, seq: this.nextSeq++, fn, cancelled: false };
    this.push(timer);
    this.liveTimers++;
    return () => {
      if (timer.cancelled) return;
      timer.cancelled = true;
      this.liveTimers--;
      // Code that re-arms a far-off timer over and over (lease renewals, aborted sleeps)
      // would otherwise grow the heap without bound until virtual time reaches their due times.
      if (this.heap.length > 64 && this.heap.length > 2 * this.liveTimers) this.compact();
    };
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOn(this, ms, signal);
  }

  /** Timers set and neither fired nor cancelled. */
  pendingTimers(): number {
    return this.liveTimers;
  }

  advance(ms: number): Promise<void> {
    if (!(ms >= 0) || !Number.isFinite(ms)) {
      throw new RangeError(`VirtualClock.advance needs a finite ms >= 0, got ${ms}`);
    }
    return this.enqueue(() => this.elapsedMs + ms);
  }

  /** Moves wall time to `wallMs` (now() afterwards equals it). */
  advanceTo(wallMs: number): Promise<void> {
    if (!(wallMs >= this.now())) {
      throw new RangeError(`VirtualClock cannot move backwards: advanceTo(${wallMs}) < now() ${this.now()}`);
    }
    return this.enqueue(() => wallMs - this.startMs);
  }

  // The target is computed when the queued advance starts, so `advance(10); advance(10)`
  // issued back to back ends 20 ms later, not 10.
  private enqueue(targetElapsed: () => number): Promise<void> {
    // max(): an advanceTo() queued behind a longer advance() must not move time back.
    const run = this.queue.then(() => this.runUntil(Math.max(this.elapsedMs, targetElapsed())));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async runUntil(targetElapsedMs: number): Promise<void> {
    await settle();
    for (;;) {
      const timer = this.popDue(targetElapsedMs);
      if (timer === undefined) break;
      this.elapsedMs = timer.dueMs;
      this.liveTimers--;
      timer.cancelled = true; // makes a late cancel() call a no-op
      // A throwing callback rejects this advance() and leaves the clock at its due time:
      // a test bug should surface, not be swallowed.
      timer.fn();
      // Let async code woken by this timer run and schedule follow-up timers that may
      // themselves be due before the target.
      await settle();
    }
    this.elapsedMs = targetElapsedMs;
    await settle();
  }

  private popDue(targetElapsedMs: number): VirtualTimer | undefined {
    for (;;) {
      const top = this.heap[0];
      if (top === undefined || top.dueMs > targetElapsedMs) return undefined;
      this.popTop();
      if (!top.cancelled) return top;
    }
  }

  private compact(): void {
    const live = this.heap.filter((t) => !t.cancelled);
    this.heap.length = 0;
    for (const t of live) this.push(t);
  }

  private push(timer: VirtualTimer): void {
    const heap = this.heap;
    heap.push(timer);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent]!;
      if (!earlier(timer, p)) break;
      heap[i] = p;
      i = parent;
    }
    heap[i] = timer;
  }

  private popTop(): void {
    const heap = this.heap;
    const last = heap.pop();
    if (last === undefined || heap.length === 0) return;
    let i = 0;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= heap.length) break;
      const right = left + 1;
      const child = right < heap.length && earlier(heap[right]!, heap[left]!) ? right : left;
      if (!earlier(heap[child]!, last)) break;
      heap[i] = heap[child]!;
      i = child;
    }
    heap[i] = last;
  }
}

// setImmediate runs after the microtask queue is drained, so every promise chain that can
// make progress without real I/O has done so by the time it resolves.
function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
