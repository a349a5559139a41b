// The leader's half of scheduling: turns jobs whose next instant is near into stored firings,
// ahead of time (within `horizonMs`), so delivery can start at the instant itself. Each step is
// one fenced batch: firings inserted, jobs advanced (next_fire_at / last_fired_at), all or
// nothing, and only while our lease epoch is the store's. Jobs found later than the misfire
// threshold go through the misfire policy instead of replaying every missed instant.

import type { Clock } from "./clock.ts";
import { newFiringId } from "./ids.ts";
import type { Leader } from "./leader.ts";
import type { Logger } from "./log.ts";
import { catchupLimit, decideMisfire, type StoredMiss } from "./misfire.ts";
import type { Job } from "./model.ts";
import type { EnqueuedFiring, Fence, NewFiring, PlanEntry, Store } from "./ports.ts";
import { compileSchedule, lastInstantsUpTo, type CompiledSchedule } from "./schedule.ts";
import { SingleFlight, yieldToEventLoop } from "./single-flight.ts";

export interface PlannerOptions {
  /** Firings due within this much of now are enqueued ahead of time. */
  horizonMs: number;
  misfireThresholdMs: number;
  /** Jobs read per step; a step loops until no due job is left. */
  batchSize: number;
  /** Firings one job may get in one step (an every-1ms job must not flood a step). */
  maxFiringsPerJob: number;
  tickMs: number;
}

const RECOVERY_EVERY_MS = 5_000;

export const DEFAULT_PLANNER_OPTIONS: PlannerOptions = {
  horizonMs: 10_000,
  misfireThresholdMs: 60_000,
  // Small: each step holds the database while firings due now wait behind it (at 5,000/s,
  // steps of 1,000 jobs made p99 lateness ~250 ms; steps of 100, ~45 ms).
  batchSize: 100,
  maxFiringsPerJob: 1_000,
  tickMs: 500,
};

/** Where enqueued firings go next: the local dispatcher now, the owning node in a cluster. */
export type EnqueuedListener = (firings: EnqueuedFiring[]) => void;

/** What planning costs, for metrics; nothing in the planner depends on who listens. */
export interface PlannerEvents {
  /**
   * One pass over the due jobs ended: time spent in the store reads that found them (ms, on
   * the monotonic clock), how many due jobs they returned and how many firings were enqueued.
   */
  onPass?: (pass: { findDueMs: number; found: number; enqueued: number }) => void;
}

export class Planner {
  /** Compiled schedules by job id, valid while the schedule and anchor are the same (ids can be reused). */
  private readonly compiled = new Map<string, { key: string; schedule: CompiledSchedule }>();
  private timerCancel: (() => void) | null = null;
  private running = false;
  /** One planning step at a time; the next tick is armed when no step is wanted right away. */
  private readonly steps = new SingleFlight(
    () => this.runStep(),
    () => this.arm(this.opts.tickMs),
  );
  private needsRecovery = false;
  private lastRecoveryMono = -Infinity;

  constructor(
    private readonly store: Store,
    private readonly leader: Leader,
    private readonly clock: Clock,
    private readonly opts: PlannerOptions,
    private readonly onEnqueued: EnqueuedListener,
    private readonly log: Logger,
    /** The node to deliver a firing (the hash ring's choice); null = any node. */
    private readonly ownerOf: (jobId: string, scheduledAt: number) => string | null = () => null,
    private readonly events: PlannerEvents = {},
  ) {
    leader.onChange((e) => {
      if (e.kind === "elected") {
        this.needsRecovery = true;
        this.wake();
      }
    });
  }

  start(): void {
    this.running = true;
    this.wake();
  }

  stop(): Promise<void> {
    this.running = false;
    this.timerCancel?.();
    return this.steps.idle();
  }

  /** Plan now rather than at the next tick (a job was just created or resumed). */
  wake(): void {
    if (!this.running) return;
    this.timerCancel?.();
    this.timerCancel = null;
    this.steps.trigger();
  }

  private arm(delayMs: number): void {
    if (!this.running) return;
    this.timerCancel?.();
    this.timerCancel = this.clock.setTimer(delayMs, () => this.steps.trigger());
  }

  private async runStep(): Promise<void> {
    try {
      const fence = this.leader.current();
      if (!fence) return;
      // On takeover, and every few seconds after: stored firings a node handed back as missed
      // (it found them past the threshold, e.g. after the store was unreachable) wait for it.
      if (this.needsRecovery || this.clock.monoNow() - this.lastRecoveryMono >= RECOVERY_EVERY_MS) {
        this.lastRecoveryMono = this.clock.monoNow();
        try {
          await this.recoverStored(fence);
          this.needsRecovery = false;
        } catch (err) {
          // Planning must go on even when recovery cannot (it is tried again in a few seconds).
          this.log.error("misfire recovery failed", { err: String(err) });
        }
      }
      await this.planDue(fence);
    } catch (err) {
      this.log.error("planning step failed", { err: String(err) });
    }
  }

  /** One pass over the due jobs; exposed for tests. Returns how many firings were enqueued. */
  async planDue(fence: Fence): Promise<number> {
    const pass = { findDueMs: 0, found: 0, enqueued: 0 };
    try {
      return await this.planDueBatches(fence, pass);
    } finally {
      this.events.onPass?.(pass);
    }
  }

  /** planDue's loop, a batch of due jobs at a time, adding up in `cost` what it took and did. */
  private async planDueBatches(fence: Fence, cost: { findDueMs: number; found: number; enqueued: number }): Promise<number> {
    let total = 0;
    for (;;) {
      const now = this.clock.now();
      const readStart = this.clock.monoNow();
      const jobs = await this.store.jobs.due(now + this.opts.horizonMs, this.opts.batchSize);
      cost.findDueMs += this.clock.monoNow() - readStart;
      cost.found += jobs.length;
      if (jobs.length === 0) return total;
      const entries = this.planEach(jobs, now, () => []);
      const inserted = await this.apply(fence, entries, now);
      const catchup = entries.reduce((n, e) => n + e.firings.filter((f) => f.catchup).length, 0);
      if (catchup > 0) {
        const jobsCaughtUp = entries.filter((e) => e.firings.some((f) => f.catchup)).length;
        this.log.info("misfire catch-up", { jobs: jobsCaughtUp, catchup_firings: catchup });
      }
      if (inserted === null) return total;
      total += inserted;
      cost.enqueued = total;
      if (jobs.length < this.opts.batchSize) return total;
      // Between steps, due work gets its turn at the database (and timers at the event loop,
      // when the store runs on this thread): a spike's planning must not hold either for seconds.
      await yieldToEventLoop();
      if (!this.leader.current()) return total;
    }
  }

  /**
   * Runs when this node becomes leader, before its first regular step: firings a previous
   * leader stored but that were never attempted and are now past the misfire threshold are
   * put through their job's policy together with the instants that were never enqueued.
   */
  async recoverStored(fence: Fence): Promise<void> {
    const now = this.clock.now();
    const missed = await this.store.firings.missedStored(now - this.opts.misfireThresholdMs, 100_000);
    if (missed.length === 0) return;
    const byJob = new Map<string, StoredMiss[]>();
    for (const f of missed) {
      const list = byJob.get(f.jobId);
      if (list) list.push(f);
      else byJob.set(f.jobId, [f]);
    }
    const jobs = await this.store.jobs.getMany([...byJob.keys()]);
    const entries = this.planEach(jobs, now, (j) => byJob.get(j.spec.id) ?? []);
    await this.apply(fence, entries, now);
    const skipped = entries.reduce((n, e) => n + e.skipStoredIds.length, 0);
    const caught = entries.reduce((n, e) => n + e.catchupStoredIds.length + e.firings.filter((f) => f.catchup).length, 0);
    this.log.info("misfire recovery", { jobs: jobs.length, stored_missed: missed.length, skipped, catchup: caught });
  }

  /**
   * planJob for each job; a job whose schedule cannot be computed (a zone gone from newer
   * tzdata, say) is logged and left out, so it cannot stop every other job from being planned.
   */
  private planEach(jobs: Job[], now: number, stored: (j: Job) => StoredMiss[]): PlanEntry[] {
    const entries: PlanEntry[] = [];
    for (const j of jobs) {
      try {
        entries.push(this.planJob(j, now, stored(j)));
      } catch (err) {
        this.log.error("cannot compute the job's schedule; it is not planned", { job_id: j.spec.id, err: String(err) });
      }
    }
    return entries;
  }

  private async apply(fence: Fence, entries: PlanEntry[], now: number): Promise<number | null> {
    const result = await this.store.firings.applyPlan(fence, entries, now);
    if (!result.fenced) {
      this.leader.stepDown(fence.epoch, "enqueue rejected by the store: stale epoch");
      return null;
    }
    if (result.inserted.length > 0) this.onEnqueued(result.inserted);
    return result.inserted.length;
  }

  private compile(job: Job): CompiledSchedule {
    const key = `${job.anchorAt}:${JSON.stringify(job.spec.schedule)}`;
    const hit = this.compiled.get(job.spec.id);
    if (hit && hit.key === key) return hit.schedule;
    const schedule = compileSchedule(job.spec.schedule, job.anchorAt);
    if (this.compiled.size >= 100_000) this.compiled.clear(); // a cache, not a second copy of the jobs table
    this.compiled.set(job.spec.id, { key, schedule });
    return schedule;
  }

  /** Pure given the job, the time and the stored misses: what this step does for one job. */
  planJob(job: Job, now: number, storedMissed: StoredMiss[]): PlanEntry {
    const schedule = this.compile(job);
    const spec = job.spec;
    const entry: PlanEntry = {
      jobId: spec.id,
      version: job.version,
      nextFireAt: job.nextFireAt,
      lastFiredAt: null,
      firings: [],
      skipStoredIds: [],
      catchupStoredIds: [],
    };
    const make = (at: number, catchup: boolean): NewFiring => ({
      id: newFiringId(now),
      jobId: spec.id,
      scheduledAt: at,
      catchup,
      manual: false,
      priority: spec.priority,
      owner: this.ownerOf(spec.id, at),
    });
    let next = job.nextFireAt;
    const late = next !== null && now - next > this.opts.misfireThresholdMs;
    if (late || storedMissed.length > 0) {
      const oneShot = "at" in spec.schedule;
      const limit = catchupLimit(spec.misfire.policy, spec.misfire.max_catchup, oneShot);
      const computed = late && next !== null && limit > 0 ? lastInstantsUpTo(schedule, next, now, limit) : [];
      const d = decideMisfire(spec.misfire.policy, spec.misfire.max_catchup, oneShot, storedMissed, computed);
      entry.skipStoredIds = d.skipStoredIds;
      entry.catchupStoredIds = d.catchupStoredIds;
      for (const at of d.fireComputed) entry.firings.push(make(at, true));
      if (d.fireComputed.length > 0) entry.lastFiredAt = d.fireComputed[d.fireComputed.length - 1]!;
      if (late) next = schedule.next(now);
    }
    const until = now + this.opts.horizonMs;
    while (next !== null && next <= until && entry.firings.length < this.opts.maxFiringsPerJob) {
      entry.firings.push(make(next, false));
      entry.lastFiredAt = next;
      next = schedule.next(next);
    }
    entry.nextFireAt = next;
    return entry;
  }
}
