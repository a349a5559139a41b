// Every node's half of scheduling: claim stored firings shortly before they are due, hold them
// in a timing wheel, and at their instant pass them through admission (the job's concurrency
// cap) to delivery. A claim holds while this node's heartbeat is fresh, so a node that dies lets
// go of its firings within claimTtlMs and another node re-claims them (at-least-once, same
// idempotency key); renewing the heartbeat renews every claim at once.

import type { Clock } from "./clock.ts";
import { attempt, OutcomeWriter, type AbortReason } from "./delivery.ts";
import { Admission } from "./admission.ts";
import { FairQueue } from "./fair-queue.ts";
import type { Logger } from "./log.ts";
import type { Firing, Job } from "./model.ts";
import type { FiringOutcome, Store } from "./ports.ts";
import { SingleFlight, yieldToEventLoop } from "./single-flight.ts";
import { TimingWheel } from "./wheel.ts";
import type { WebhookSender } from "./webhook.ts";

export interface DispatcherOptions {
  nodeId: string;
  /**
   * Firings due within this much of now are claimed and put in the wheel. A node that dies
   * holds what it claimed until its claims run out (claimTtlMs), whatever this is, so the
   * worst lateness after a crash does not depend on it; only how many firings are affected.
   */
  lookaheadMs: number;
  /** Claims and concurrency slots of a node whose heartbeat is older than this are void. */
  claimTtlMs: number;
  feedEveryMs: number;
  /** Global cap on webhook requests in flight from this node. */
  maxInFlight: number;
  /** A first attempt found later than this was missed: misfire recovery decides it. */
  misfireThresholdMs: number;
  signingSecret: string | null;
}

export const DEFAULT_DISPATCHER_OPTIONS: Omit<DispatcherOptions, "nodeId" | "signingSecret"> = {
  lookaheadMs: 10_000,
  claimTtlMs: 5_000,
  feedEveryMs: 1_000,
  maxInFlight: 512,
  misfireThresholdMs: 60_000,
};

/** Rows per claim; a smaller claim holds the database for less time in front of due work. */
const CLAIM_BATCH = 100;
const ADMIT_BATCH = 500;
const ADMIT_EVERY_MS = 5;
const JOB_CACHE_MAX = 100_000;

export interface DispatcherEvents {
  /** A firing reached a terminal state or was retried, after the store recorded it. */
  onOutcome?: (firing: Firing, outcome: FiringOutcome) => void;
  /** A first, on-schedule attempt started this late (ms after its instant). */
  onLateness?: (ms: number) => void;
  /** A webhook request took this long (ms), whatever its answer. */
  onRequest?: (ms: number) => void;
  /** The overlap policy skipped a firing. */
  onSkipped?: () => void;
}

export class Dispatcher {
  private readonly wheel: TimingWheel<Firing>;
  private readonly admission: Admission;
  private readonly jobs = new Map<string, Job>();
  /** Admitted firings waiting for delivery capacity, shared 6:3:1 by priority. */
  private readonly ready = new FairQueue<Firing>((f) => this.jobs.get(f.jobId)?.spec.priority ?? "normal");
  private readonly inFlight = new Map<string, AbortController>();
  private readonly writer: OutcomeWriter;
  private readonly timers: (() => void)[] = [];
  private wheelTimer: { at: number; cancel: () => void } | null = null;
  private running = false;
  private pumping = false;
  private readonly feeder = new SingleFlight(() => this.feed());
  private lastReclaimMono = -Infinity;
  /** Come due in the wheel, not yet through admission. */
  private dueQueue: Firing[] = [];
  private lastAdmitMono = -Infinity;
  private readonly admitter = new SingleFlight(() => this.admitDue());

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly send: WebhookSender,
    /** The live nodes: firings owned by a node not among them are anyone's to take. */
    private readonly liveIds: () => string[],
    private readonly opts: DispatcherOptions,
    private readonly log: Logger,
    private readonly events: DispatcherEvents = {},
    private readonly random: () => number = Math.random,
  ) {
    this.wheel = new TimingWheel<Firing>(clock.now());
    this.writer = new OutcomeWriter(store.firings, opts.nodeId, clock);
    this.admission = new Admission(store, opts.nodeId, opts.claimTtlMs, () => clock.now(), log, () => events.onSkipped?.());
  }

  async start(): Promise<void> {
    // Claims are keyed by node id: whatever a crashed process with this id held is nobody's now.
    const handedBack = await this.store.firings.releaseAllHeldBy(this.opts.nodeId, this.clock.now());
    if (handedBack > 0) this.log.warn("handed back firings an earlier process with this node id held", { count: handedBack });
    this.running = true;
    this.every(this.opts.feedEveryMs, () => {
      this.poke();
      void this.offerWaiting(); // a slot may have been freed on another node
    });
    this.every(1_000, () => void this.checkCancels());
    this.poke();
  }

  /** Stops taking work, hands back claimed firings not yet sent, waits for requests in flight. */
  async stop(graceMs: number): Promise<void> {
    this.running = false;
    for (const cancel of this.timers) cancel();
    this.wheelTimer?.cancel();
    await this.feeder.idle();
    await Promise.race([this.admitter.idle(), this.clock.sleep(graceMs)]);
    const unsent = [
      ...this.dueQueue.splice(0),
      ...this.ready.drain(),
      ...this.admission.takeAll(),
      ...this.wheel.advance(Number.MAX_SAFE_INTEGER).map((e) => e.value),
    ];
    await this.store.firings.release(this.opts.nodeId, unsent.map((f) => f.id), this.clock.now()).catch(() => {});
    const deadline = this.clock.monoNow() + graceMs;
    while (this.inFlight.size > 0 && this.clock.monoNow() < deadline) await this.clock.sleep(20);
    await this.writer.flush();
  }

  /** Look for newly due work now (firings were just enqueued or a retry came due). */
  poke(): void {
    if (this.running) this.feeder.trigger();
  }

  /** The job changed or went away: its next deliveries must read it afresh. */
  forgetJob(jobId: string): void {
    this.jobs.delete(jobId);
  }

  /** Aborts a request in flight on this node (a cancel accepted while RUNNING). */
  abort(firingId: string): boolean {
    const c = this.inFlight.get(firingId);
    if (!c) return false;
    c.abort("cancelled" satisfies AbortReason);
    return true;
  }

  /** A firing cancelled before it ran: drop it from the wheel and from any overlap wait. */
  dropWaiting(firing: Firing): void {
    this.wheel.cancel(firing.id);
    this.admission.drop(firing.id);
    void this.offerWaiting(firing.jobId); // a cancelled retry gave its slot back
  }

  stats(): { wheel: number; ready: number; waiting: number; inFlight: number } {
    return { wheel: this.wheel.size, ready: this.ready.size, waiting: this.admission.waitingCount, inFlight: this.inFlight.size };
  }

  /** Runs fn every ms until stop(); the timer is re-armed after each run. */
  private every(ms: number, fn: () => void): void {
    const slot = this.timers.length;
    const arm = (): void => {
      this.timers[slot] = this.clock.setTimer(ms, () => {
        fn();
        if (this.running) arm();
      });
    };
    arm();
  }

  private async feed(): Promise<void> {
    if (!this.running) return;
    try {
      if (this.clock.monoNow() - this.lastReclaimMono >= this.opts.claimTtlMs / 3) {
        this.lastReclaimMono = this.clock.monoNow();
        const n = await this.store.firings.reclaimExpired(this.opts.claimTtlMs, this.clock.now());
        if (n > 0) this.log.warn("re-claimed firings whose claim expired", { count: n });
      }
      for (;;) {
        const now = this.clock.now();
        const claimed = await this.store.firings.claimReady(
          this.opts.nodeId, this.liveIds(), now + this.opts.lookaheadMs, now - this.opts.misfireThresholdMs, CLAIM_BATCH, now,
        );
        // Jobs are read at admission, a batch at a time: reading them here would keep the jobs of
        // every firing in the lookahead in memory.
        for (const f of claimed) this.wheel.add(f.id, f.nextAttemptAt, f);
        if (claimed.length > 0) this.armWheel();
        if (claimed.length < CLAIM_BATCH || !this.running) return;
        await yieldToEventLoop(); // due work gets its turn between claims (and timers, on a same-thread store)
      }
    } catch (err) {
      this.log.error("claiming due firings failed", { err: String(err) });
    }
  }

  private async loadJobs(firings: Firing[]): Promise<void> {
    const ids = [...new Set(firings.map((f) => f.jobId))];
    if (ids.length === 0) return;
    for (const job of await this.store.jobs.getMany(ids)) {
      this.jobs.delete(job.spec.id); // re-inserted as the newest
      this.jobs.set(job.spec.id, job);
    }
    // Bounded: a million one-shots would otherwise stay cached after their only firing. The
    // oldest go first; a firing whose job was dropped reads it again.
    for (const id of this.jobs.keys()) {
      if (this.jobs.size <= JOB_CACHE_MAX) break;
      this.jobs.delete(id);
    }
  }

  /**
   * The jobs of these firings as one snapshot, read again where the cache has none (it is
   * emptied when a job changes, and may be emptied again while we await). `failed` says the
   * store could not be read, so a missing job may still exist.
   */
  private async jobsFor(firings: Firing[]): Promise<{ jobs: Map<string, Job>; failed: boolean }> {
    let failed = false;
    const missing = firings.filter((f) => !this.jobs.has(f.jobId));
    if (missing.length > 0) {
      await this.loadJobs(missing).catch((err) => {
        failed = true;
        this.log.error("loading jobs failed", { err: String(err) });
      });
    }
    const jobs = new Map<string, Job>();
    for (const f of firings) {
      const job = this.jobs.get(f.jobId);
      if (job) jobs.set(f.jobId, job);
    }
    return { jobs, failed };
  }

  /** Firings this node cannot deliver: cancelled if their job is gone, else handed back. */
  private async dropOrphans(orphans: Firing[]): Promise<void> {
    if (orphans.length === 0) return;
    for (const f of orphans) this.admission.drop(f.id);
    await this.persist("handing back firings", () => this.store.firings.dropOrphans(this.opts.nodeId, orphans.map((f) => f.id), this.clock.now()));
  }

  private armWheel(): void {
    const due = this.wheel.nextDueMs();
    if (due === null || !this.running) return;
    if (this.wheelTimer && this.wheelTimer.at <= due) return;
    this.wheelTimer?.cancel();
    const cancel = this.clock.setTimer(due - this.clock.now(), () => {
      this.wheelTimer = null;
      this.onWheel();
    });
    this.wheelTimer = { at: due, cancel };
  }

  private onWheel(): void {
    const due = this.wheel.advance(this.clock.now()).map((e) => e.value);
    this.armWheel();
    if (due.length === 0) return;
    for (const f of due) this.dueQueue.push(f);
    this.admitter.trigger();
  }

  /**
   * Admits due firings one batch at a time, oldest first. What comes due while a batch is in
   * the store waits for the next one, so batches grow with the load: one transaction per
   * millisecond at a steady rate would cost more than the firings themselves, and a spike's
   * first requests go out once its first batch is admitted, not all of it.
   */
  private async admitDue(): Promise<void> {
    while (this.dueQueue.length > 0) {
      // At a steady rate, firings come due every millisecond or so; each write transaction costs
      // more than the firings in it, so they are gathered for up to ADMIT_EVERY_MS. After a
      // quiet spell there is no wait: a lone firing goes at its instant.
      const wait = this.lastAdmitMono + ADMIT_EVERY_MS - this.clock.monoNow();
      if (wait > 0 && this.dueQueue.length < ADMIT_BATCH) await this.clock.sleep(wait);
      this.lastAdmitMono = this.clock.monoNow();
      const batch = this.dueQueue.splice(0, ADMIT_BATCH);
      try {
        await this.admit(batch);
      } catch (err) {
        this.log.error("admitting firings failed", { err: String(err) });
      }
    }
  }

  private async admit(firings: Firing[]): Promise<void> {
    const { jobs } = await this.jobsFor(firings);
    await this.dropOrphans(firings.filter((f) => !jobs.has(f.jobId)));
    // A first attempt found later than the misfire threshold was missed, not merely late: it
    // goes back to the store for the leader's misfire recovery to decide (its policy may skip
    // it or keep only the latest), instead of being sent stale.
    const now = this.clock.now();
    const missed = new Set(firings.filter((f) => jobs.has(f.jobId) && isMissed(f, now, this.opts.misfireThresholdMs)));
    if (missed.size > 0) {
      await this.persist("handing back missed firings", () => this.store.firings.release(this.opts.nodeId, [...missed].map((f) => f.id), now));
      this.log.info("missed firings left to misfire recovery", { count: missed.size });
    }
    const known = firings.filter((f) => jobs.has(f.jobId) && !missed.has(f));
    const run = await this.persist("admitting firings", () => this.admission.admit(known, (id) => jobs.get(id)));
    for (const f of run) this.ready.push(f);
    void this.pump();
  }

  /** Offers waiting firings a slot again (of one job after a local release, else all). */
  private async offerWaiting(jobId?: string): Promise<void> {
    try {
      const waiting = this.admission.waitingFirings(jobId);
      const { jobs } = await this.jobsFor(waiting);
      await this.dropOrphans(waiting.filter((f) => !jobs.has(f.jobId)));
      const run = await this.admission.retry((id) => jobs.get(id), jobId);
      for (const f of run) this.ready.push(f);
      if (run.length > 0) void this.pump();
    } catch (err) {
      this.log.warn("offering waiting firings a slot failed", { err: String(err) });
    }
  }

  /** Moves ready firings to RUNNING as delivery capacity allows, by priority share, oldest first within one. */
  private async pump(): Promise<void> {
    if (this.pumping) return;
    this.pumping = true;
    try {
      while (this.ready.size > 0 && this.inFlight.size < this.opts.maxInFlight) {
        const batch = this.ready.take(this.opts.maxInFlight - this.inFlight.size);
        for (const f of batch) this.inFlight.set(f.id, new AbortController());
        let started: Set<string>;
        try {
          started = await this.store.firings.markRunning(this.opts.nodeId, batch.map((f) => f.id), this.clock.now());
        } catch (err) {
          this.log.error("marking firings running failed", { err: String(err) });
          for (const f of batch) this.inFlight.delete(f.id);
          this.ready.unshift(batch);
          await this.clock.sleep(200);
          continue;
        }
        // Claimed by this node until now, so nothing else changed them: RUNNING is one more attempt.
        const running: Firing[] = [];
        for (const f of batch) {
          if (started.has(f.id)) running.push({ ...f, state: "RUNNING", attempts: f.attempts + 1, deliveredBy: this.opts.nodeId });
        }
        const notStarted = batch.filter((f) => !started.has(f.id));
        for (const f of notStarted) this.inFlight.delete(f.id);
        if (notStarted.length > 0) {
          // Cancelled, withdrawn or re-claimed meanwhile: nothing to send; give their slots back.
          await this.persist("releasing slots", () => this.admission.release(notStarted.map((f) => f.id)));
          for (const jobId of new Set(notStarted.map((f) => f.jobId))) void this.offerWaiting(jobId);
        }
        for (const f of running) void this.deliver(f);
      }
    } finally {
      this.pumping = false;
    }
  }

  private async deliver(firing: Firing): Promise<void> {
    const controller = this.inFlight.get(firing.id)!;
    const { jobs, failed } = await this.jobsFor([firing]);
    const job = jobs.get(firing.jobId);
    let outcome: FiringOutcome;
    if (!job && failed) {
      // The store could not be read: the job may well exist. Try again shortly, unsent.
      outcome = { id: firing.id, state: "RETRYING", nextAttemptAt: this.clock.now() + 1_000, error: "job could not be read" };
    } else if (!job) {
      outcome = { id: firing.id, state: "CANCELLED", error: "job deleted" };
    } else {
      const ctx = { clock: this.clock, send: this.send, signingSecret: this.opts.signingSecret, random: this.random };
      const startedAt = this.clock.now();
      if (firing.attempts === 1 && !firing.catchup) this.events.onLateness?.(startedAt - firing.scheduledAt);
      outcome = await attempt(ctx, job.spec, firing, controller);
      this.events.onRequest?.(this.clock.now() - startedAt);
    }
    const moved = await this.persist("recording a delivery outcome", () => this.writer.write(outcome));
    // A one-shot's job has no further firing to deliver (a retry reads it again).
    if (job && "at" in job.spec.schedule && outcome.state !== "RETRYING") this.jobs.delete(job.spec.id);
    this.inFlight.delete(firing.id);
    if (moved) {
      if (outcome.state === "DEAD") this.log.warn("firing dead", { firing_id: firing.id, job_id: firing.jobId, error: outcome.error });
      this.events.onOutcome?.(firing, outcome);
    }
    if (outcome.state === "RETRYING") {
      // The slot stays held through retries; come back when the next attempt is near.
      const delay = outcome.nextAttemptAt - this.clock.now();
      if (delay < this.opts.lookaheadMs) this.clock.setTimer(delay, () => this.poke());
    } else {
      void this.offerWaiting(firing.jobId); // its slot was given back with the outcome
    }
    void this.pump();
  }

  /**
   * Writes that decide a firing's fate must land: a firing this node forgot while it still
   * claims it would be renewed forever and never delivered. Retries with capped backoff.
   */
  private async persist<T>(what: string, write: () => Promise<T>): Promise<T> {
    for (let wait = 50; ; wait = Math.min(wait * 2, 2_000)) {
      try {
        return await write();
      } catch (err) {
        this.log.error(`${what} failed; retrying`, { err: String(err) });
        await this.clock.sleep(wait);
      }
    }
  }

  /** Learns of cancels taken by any node's API within a second, and aborts those requests. */
  private async checkCancels(): Promise<void> {
    if (this.inFlight.size === 0) return;
    try {
      for (const id of await this.store.firings.cancelRequested([...this.inFlight.keys()])) this.abort(id);
    } catch (err) {
      this.log.warn("checking cancel requests failed", { err: String(err) });
    }
  }
}

/** A first, regular attempt found later than the threshold (a re-driven DEAD firing restarts the clock). */
export function isMissed(f: Firing, nowMs: number, thresholdMs: number): boolean {
  return f.attempts === 0 && !f.catchup && !f.manual && !f.waiting && nowMs - f.nextAttemptAt > thresholdMs;
}
