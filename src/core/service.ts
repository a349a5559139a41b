// What the API asks of the scheduler: job and firing operations with their rules (when the next
// instant is computed, what a change withdraws, how cancel reaches a running request). The
// HTTP layer validates and shapes; this layer decides; the store persists.

import type { Clock } from "./clock.ts";
import type { Dispatcher } from "./dispatcher.ts";
import { newFiringId } from "./ids.ts";
import type { Leader } from "./leader.ts";
import type { MemberView } from "./membership.ts";
import type { Firing, FiringState, Job, JobSpec, Schedule } from "./model.ts";
import type { Planner } from "./planner.ts";
import type { CancelResult, FiringPage, JobPage, Store } from "./ports.ts";
import { compileSchedule, parseInstantMs, previewTimes } from "./schedule.ts";

/** What the service needs of the cluster: who owns a job, and how to wake a firing's owner. */
export interface ClusterView {
  ownerOf(jobId: string, scheduledAt: number): string | null;
  notify(firings: Firing[]): void;
  members(): MemberView[];
}

export interface ClusterStatus {
  leader: string | null;
  epoch: number;
  leaseExpiresAt: number;
  nodes: MemberView[];
}

/** What the status page shows: aggregates and short lists only, whatever the number of jobs. */
export interface StatusSnapshot {
  nodeId: string;
  nowMs: number;
  cluster: ClusterStatus;
  backlog: number;
  lateness: { p50: number; p99: number; count: number } | null;
  recent: Firing[];
  dead: Firing[];
  dueNext: Job[];
  /** Jobs whose next instant falls in each minute of the next 24 h, oldest minute first. */
  upcomingPerMinute: number[];
}

export class NotFoundError extends Error {}
export class ConflictError extends Error {}

/** Earliest representable instant: asking next() after it yields a one-shot's own instant. */
const BEGINNING_MS = -8.64e15;

export class SchedulerService {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly planner: Planner,
    private readonly dispatcher: Dispatcher,
    private readonly leader: Leader,
    private readonly cluster: ClusterView,
  ) {}

  /** A fresh job row for `spec` as of now: anchor and first instant computed. */
  private newJob(spec: JobSpec, now: number): Job {
    const anchorAt = anchorOf(spec, now);
    return {
      spec,
      paused: false,
      nextFireAt: firstInstant(spec, anchorAt, now),
      lastFiredAt: null,
      anchorAt,
      createdAt: now,
      updatedAt: now,
      version: 1,
    };
  }

  async create(spec: JobSpec): Promise<Job> {
    const job = this.newJob(spec, this.clock.now());
    if (!(await this.store.jobs.insert(job))) throw new ConflictError(`job "${spec.id}" already exists`);
    this.planner.wake();
    return job;
  }

  async createMany(specs: JobSpec[]): Promise<string[]> {
    const now = this.clock.now();
    const seen = new Set<string>();
    for (const s of specs) {
      if (seen.has(s.id)) throw new ConflictError(`job "${s.id}" appears twice in the batch`);
      seen.add(s.id);
    }
    const result = await this.store.jobs.insertMany(specs.map((s) => this.newJob(s, now)));
    if (!Array.isArray(result)) throw new ConflictError(`job "${result.duplicate}" already exists`);
    this.planner.wake();
    return result;
  }

  /** PUT: create, or replace the definition; an identical definition changes nothing. */
  async put(spec: JobSpec): Promise<{ job: Job; created: boolean }> {
    const existing = await this.store.jobs.get(spec.id);
    if (existing && JSON.stringify(existing.spec) === JSON.stringify(spec)) return { job: existing, created: false };
    const now = this.clock.now();
    const outcome = await this.store.jobs.upsert(this.newJob(spec, now), now);
    this.afterChange(spec.id);
    return { job: (await this.get(spec.id))!, created: outcome === "created" };
  }

  async get(id: string): Promise<Job | null> {
    return this.store.jobs.get(id);
  }

  async require(id: string): Promise<Job> {
    const job = await this.store.jobs.get(id);
    if (!job) throw new NotFoundError(`job "${id}" not found`);
    return job;
  }

  list(limit: number, cursor: string | null): Promise<JobPage> {
    return this.store.jobs.list(limit, cursor);
  }

  /** PATCH: `spec` is the merged, validated definition. A schedule change takes effect from now. */
  async update(current: Job, spec: JobSpec): Promise<Job> {
    const now = this.clock.now();
    const scheduleChanged = JSON.stringify(current.spec.schedule) !== JSON.stringify(spec.schedule);
    const next: Job = { ...current, spec, updatedAt: now };
    if (scheduleChanged) {
      next.anchorAt = anchorOf(spec, now);
      next.nextFireAt = current.paused ? null : firstInstant(spec, next.anchorAt, now);
    }
    if (!(await this.store.jobs.update(next, current.version, now, scheduleChanged))) {
      throw new ConflictError(`job "${spec.id}" was changed concurrently; retry`);
    }
    this.afterChange(spec.id);
    return (await this.get(spec.id)) ?? next;
  }

  async delete(id: string): Promise<void> {
    const { deleted, runningIds } = await this.store.jobs.delete(id, this.clock.now());
    if (!deleted) throw new NotFoundError(`job "${id}" not found`);
    for (const firingId of runningIds) this.dispatcher.abort(firingId);
    this.dispatcher.forgetJob(id);
  }

  async pause(id: string): Promise<Job> {
    const job = await this.store.jobs.setPaused(id, true, null, this.clock.now());
    if (!job) throw new NotFoundError(`job "${id}" not found`);
    return job;
  }

  /**
   * Paused time is not a misfire: the schedule resumes at its next instant after now. The next
   * instant comes from the schedule as read, so the write is a compare-and-set on its version.
   */
  async resume(id: string): Promise<Job> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const current = await this.require(id);
      if (!current.paused) return current;
      const now = this.clock.now();
      const next = compileSchedule(current.spec.schedule, current.anchorAt).next(now);
      const job = await this.store.jobs.setPaused(id, false, next, now, current.version);
      if (job) {
        this.planner.wake();
        return job;
      }
    }
    throw new ConflictError(`job "${id}" keeps changing; retry`);
  }

  /** Fire now, once; the firing obeys the job's concurrency and overlap settings. */
  async trigger(id: string): Promise<Firing> {
    const job = await this.require(id);
    const lease = await this.store.lease.read();
    for (let attempt = 0; attempt < 5; attempt++) {
      const now = this.clock.now() + attempt; // two triggers in one ms would share an instant
      const firing = await this.store.firings.insertManual(
        {
          id: newFiringId(now),
          jobId: id,
          scheduledAt: now,
          catchup: false,
          manual: true,
          priority: job.spec.priority,
          owner: this.cluster.ownerOf(id, now),
        },
        lease.epoch,
        now,
      );
      if (firing) {
        this.cluster.notify([firing]);
        return firing;
      }
    }
    if (!(await this.store.jobs.get(id))) throw new NotFoundError(`job "${id}" not found`);
    throw new ConflictError(`could not trigger job "${id}": instant taken, retry`);
  }

  getFiring(id: string): Promise<Firing | null> {
    return this.store.firings.get(id);
  }

  listFirings(state: FiringState | null, limit: number, cursor: string | null): Promise<FiringPage> {
    return this.store.firings.list(state, limit, cursor);
  }

  async listJobFirings(jobId: string, limit: number, cursor: string | null): Promise<FiringPage> {
    await this.require(jobId);
    return this.store.firings.listByJob(jobId, limit, cursor);
  }

  async cancelFiring(id: string): Promise<CancelResult> {
    const before = await this.store.firings.get(id);
    const result = await this.store.firings.cancel(id, this.clock.now());
    if (result === "cancel-accepted") this.dispatcher.abort(id);
    if (result === "cancel-completed" && before) this.dispatcher.dropWaiting(before);
    return result;
  }

  async retryFiring(id: string): Promise<Firing> {
    const firing = await this.store.firings.retryDead(id, this.clock.now());
    if (!firing) {
      const current = await this.store.firings.get(id);
      if (!current) throw new NotFoundError(`firing "${id}" not found`);
      if (current.state === "DEAD") throw new ConflictError(`firing "${id}" cannot be retried: its job was deleted`);
      throw new ConflictError(`firing "${id}" is ${current.state}; only DEAD firings can be retried`);
    }
    this.cluster.notify([firing]);
    return firing;
  }

  /** The next `count` instants after `fromMs` (default now), by the code the planner uses. */
  preview(schedule: Schedule, fromMs: number | null, count: number): number[] {
    const from = fromMs ?? this.clock.now();
    const start = schedule.start_at ? parseInstantMs(schedule.start_at) : null;
    return previewTimes(schedule, start ?? from, from, count);
  }

  /** SPEC GET /v1/cluster: the lease as the store has it, the members as this node sees them. */
  async clusterStatus(): Promise<ClusterStatus> {
    const lease = await this.store.lease.read();
    const held = lease.holder !== null && lease.expiresAt > lease.dbNowMs;
    return { leader: held ? lease.holder : null, epoch: lease.epoch, leaseExpiresAt: lease.expiresAt, nodes: this.cluster.members() };
  }

  /** A peer enqueued firings this node owns: claim them now rather than at the next poll. */
  poke(): void {
    this.dispatcher.poke();
  }

  private upcoming: { atMs: number; minutes: number[] } | null = null;

  /**
   * The status page's data. The 24 h load chart is one index range scan, cached for 30 s so a
   * page refreshing every few seconds on a million jobs stays cheap.
   */
  async status(nodeId: string, lateness: StatusSnapshot["lateness"]): Promise<StatusSnapshot> {
    const nowMs = this.clock.now();
    const from = Math.floor(nowMs / 60_000) * 60_000;
    if (!this.upcoming || nowMs - this.upcoming.atMs > 30_000) {
      const counts = await this.store.jobs.nextFiresPerMinute(from, from + 24 * 3_600_000);
      this.upcoming = { atMs: nowMs, minutes: Array.from({ length: 1_440 }, (_, i) => counts.get(from + i * 60_000) ?? 0) };
    }
    const [cluster, backlog, recent, dead, dueNext] = await Promise.all([
      this.clusterStatus(),
      this.backlog(),
      this.store.firings.recent(nowMs, 15),
      this.store.firings.list("DEAD", 10, null),
      this.store.jobs.due(Number.MAX_SAFE_INTEGER, 10),
    ]);
    return { nodeId, nowMs, cluster, backlog, lateness, recent, dead: dead.items, dueNext, upcomingPerMinute: this.upcoming.minutes };
  }

  /** Firings of the job (or of all jobs) that came due and have not finished. */
  backlog(jobId?: string): Promise<number> {
    return this.store.firings.backlog(this.clock.now(), jobId);
  }

  isLeader(): boolean {
    return this.leader.current() !== null;
  }

  private afterChange(jobId: string): void {
    this.dispatcher.forgetJob(jobId);
    this.planner.wake();
  }
}

/** `every` series start at start_at, else at the moment the schedule was set. */
function anchorOf(spec: JobSpec, now: number): number {
  const start = spec.schedule.start_at ? parseInstantMs(spec.schedule.start_at) : null;
  return start ?? now;
}

/**
 * First instant to enqueue. A one-shot keeps its instant even when it is already past: it is
 * then late (fired at once) or, beyond the misfire threshold, handled by its misfire policy.
 */
function firstInstant(spec: JobSpec, anchorAt: number, now: number): number | null {
  const schedule = compileSchedule(spec.schedule, anchorAt);
  return schedule.next("at" in spec.schedule ? BEGINNING_MS : now);
}
