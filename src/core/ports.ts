// The store as core sees it: the operations the scheduler needs, with no SQL and no libSQL.
// src/store implements these; tests may implement them in memory. Every state change is a
// compare-and-set: a write that matches nothing is an answer (lost lease, already cancelled).

import type { Firing, FiringState, Job, JobSpec, OverlapPolicy, Priority } from "./model.ts";
import type { OverlapDecision, OverlapFacts } from "./overlap.ts";

/** The fencing token of a leader: writes only it may make carry both. */
export interface Fence {
  nodeId: string;
  epoch: number;
}

export interface NewFiring {
  id: string;
  jobId: string;
  scheduledAt: number;
  catchup: boolean;
  manual: boolean;
  priority: Priority;
  /** The node meant to deliver it; null lets any node take it. */
  owner: string | null;
}

/** One job's share of a planning step, applied atomically with every other entry of the step. */
export interface PlanEntry {
  jobId: string;
  /** The job version the plan was computed from; a job changed since is left alone. */
  version: number;
  nextFireAt: number | null;
  lastFiredAt: number | null;
  firings: NewFiring[];
  /** Stored firings the misfire policy drops (become SKIPPED) or keeps as catch-up. */
  skipStoredIds: string[];
  catchupStoredIds: string[];
}

/** What a plan step reports of each firing it stored (enough to hand it to its owner). */
export type EnqueuedFiring = Pick<Firing, "id" | "jobId" | "scheduledAt" | "owner" | "epoch" | "state" | "catchup">;

export interface PlanResult {
  /** False when the lease was no longer ours: nothing was written. */
  fenced: boolean;
  /** New firings, and stored ones the misfire policy kept as catch-up. */
  inserted: EnqueuedFiring[];
}

export interface LeaseInfo {
  holder: string | null;
  epoch: number;
  expiresAt: number;
  /** The database's clock when this was read. */
  dbNowMs: number;
}

export interface LeaseStore {
  /** Takes the lease if it has expired on the database's clock; the new epoch, or null. */
  tryAcquire(nodeId: string, ttlMs: number): Promise<LeaseInfo | null>;
  /** Extends our lease; false when it is no longer ours at this epoch. */
  renew(fence: Fence, ttlMs: number): Promise<boolean>;
  release(fence: Fence): Promise<void>;
  read(): Promise<LeaseInfo>;
}

export type FiringOutcome =
  | { id: string; state: "DONE" }
  | { id: string; state: "RETRYING"; nextAttemptAt: number; error: string }
  | { id: string; state: "DEAD" | "CANCELLED"; error: string };

export interface JobPage {
  items: Job[];
  nextCursor: string | null;
}

export interface FiringPage {
  items: Firing[];
  nextCursor: string | null;
}

export type CancelResult = "cancel-completed" | "cancel-accepted" | "terminal" | "not-found";

export interface JobStore {
  insert(job: Job): Promise<boolean>;
  insertMany(jobs: Job[]): Promise<string[] | { duplicate: string }>;
  /** Creates or replaces; a replaced job's planned future firings are withdrawn. */
  upsert(job: Job, nowMs: number): Promise<"created" | "replaced">;
  get(id: string): Promise<Job | null>;
  getMany(ids: string[]): Promise<Job[]>;
  list(limit: number, cursor: string | null): Promise<JobPage>;
  /** Replaces spec/schedule bookkeeping at `expectVersion`; withdraws planned firings when asked. */
  update(job: Job, expectVersion: number, nowMs: number, withdrawPlanned: boolean): Promise<boolean>;
  /** Deletes the job, withdraws planned firings, cancels waiting ones; RUNNING get cancel_requested. */
  delete(id: string, nowMs: number): Promise<{ deleted: boolean; runningIds: string[] }>;
  /** With expectVersion, only if the job is still at that version (null when it is not). */
  setPaused(id: string, paused: boolean, nextFireAt: number | null, nowMs: number, expectVersion?: number): Promise<Job | null>;
  /** Jobs the planner must look at: not paused, next_fire_at <= untilMs, oldest first. */
  due(untilMs: number, limit: number): Promise<Job[]>;
  /** How many jobs have their next instant in each minute of [fromMs, toMs) (minute start -> count). */
  nextFiresPerMinute(fromMs: number, toMs: number): Promise<Map<number, number>>;
}

export interface FiringStore {
  get(id: string): Promise<Firing | null>;
  listByJob(jobId: string, limit: number, cursor: string | null): Promise<FiringPage>;
  list(state: FiringState | null, limit: number, cursor: string | null): Promise<FiringPage>;
  /** Enqueues through the lease: nothing is written unless `fence` still holds it. */
  applyPlan(fence: Fence, entries: PlanEntry[], nowMs: number): Promise<PlanResult>;
  /** A manual firing (trigger); not fenced, it is an API write. Null on an instant collision. */
  insertManual(f: NewFiring, epoch: number, nowMs: number): Promise<Firing | null>;
  /**
   * First attempts nobody holds (not claimed, not waiting for a slot) whose time came before
   * `beforeMs`: misfire recovery's input.
   */
  missedStored(beforeMs: number, limit: number): Promise<Firing[]>;
  /**
   * SCHEDULED/RETRYING firings due by untilMs that nodeId may take, claimed for it: its own,
   * unowned ones, and those whose owner is not among `liveIds` (a dead node's share). First
   * regular attempts scheduled before missedBeforeMs are left for misfire recovery.
   */
  claimReady(nodeId: string, liveIds: string[], untilMs: number, missedBeforeMs: number, limit: number, nowMs: number): Promise<Firing[]>;
  /** CLAIMED by nodeId -> RUNNING (attempts + 1); returns the ones that moved. */
  markRunning(nodeId: string, ids: string[], nowMs: number): Promise<Set<string>>;
  /** RUNNING by nodeId -> outcome, each a CAS; returns which ids moved. */
  finish(nodeId: string, outcomes: FiringOutcome[], nowMs: number): Promise<Set<string>>;
  /** CLAIMED by nodeId -> SKIPPED with a reason. */
  skipClaimed(nodeId: string, ids: string[], reason: string, nowMs: number): Promise<Set<string>>;
  /** CLAIMED by nodeId -> back to SCHEDULED/RETRYING (handed back on shutdown). */
  release(nodeId: string, ids: string[], nowMs: number): Promise<void>;
  /** Hands back every claim and slot held under nodeId (by an earlier process with that id). */
  releaseAllHeldBy(nodeId: string, nowMs: number): Promise<number>;
  /**
   * CLAIMED by nodeId whose job no longer exists -> CANCELLED; the others back to SCHEDULED.
   * For firings this node cannot deliver because their job is gone or could not be read.
   */
  dropOrphans(nodeId: string, ids: string[], nowMs: number): Promise<void>;
  /**
   * Claims of nodes whose heartbeat is older than nodeTtlMs (database clock) go back to
   * SCHEDULED/RETRYING; their concurrency slots stop counting.
   */
  reclaimExpired(nodeTtlMs: number, nowMs: number): Promise<number>;
  cancel(id: string, nowMs: number): Promise<CancelResult>;
  retryDead(id: string, nowMs: number): Promise<Firing | null>;
  /** Firings whose instant has come, newest first. */
  recent(nowMs: number, limit: number): Promise<Firing[]>;
  /** Firings due by nowMs and not finished (scheduled minus completed), of one job or all. */
  backlog(nowMs: number, jobId?: string): Promise<number>;
  /** Of `ids`, those whose cancel was requested while RUNNING. */
  cancelRequested(ids: string[]): Promise<string[]>;
}

export interface NodeRecord {
  id: string;
  address: string;
  startedAt: number;
  /** Last heartbeat, on the database's clock. */
  lastSeenAt: number;
}

export interface NodeStore {
  heartbeat(id: string, address: string): Promise<void>;
  /** Every node row, with the database's clock at the time of reading. */
  list(): Promise<{ nodes: NodeRecord[]; dbNowMs: number }>;
  remove(id: string): Promise<void>;
  prune(notSeenForMs: number): Promise<number>;
}

/** A firing claimed by this node asking for a slot of its job's concurrency cap. */
export interface AdmissionRequest {
  firingId: string;
  jobId: string;
  scheduledAt: number;
  /** Offered again after waiting (its waiting flag is cleared when it gets the slot). */
  waiting: boolean;
  max: number;
  overlap: OverlapPolicy;
  maxQueue: number;
  catchup: boolean;
}

/**
 * run: it holds a slot now; wait: it waits for one (still CLAIMED, marked waiting); skip: it is
 * now SKIPPED; gone: it is no longer claimed by this node (cancelled, re-claimed elsewhere).
 */
export type AdmissionResult = { kind: "run" } | { kind: "wait" } | { kind: "skip"; reason: string } | { kind: "gone" };

export interface SlotStore {
  /**
   * Takes slots for the firings that may run, and applies `decide` to the others, in one write
   * transaction, so every node's admissions are serialised. Requests are handled oldest first;
   * a firing never takes a slot ahead of an older firing of its job that is already waiting.
   */
  admit(nodeId: string, requests: AdmissionRequest[], nodeTtlMs: number, nowMs: number, decide: (f: OverlapFacts) => OverlapDecision): Promise<Map<string, AdmissionResult>>;
  /** Frees the slots nodeId holds for these firings (they ended, or never started). */
  release(nodeId: string, firingIds: string[]): Promise<void>;
}

export interface Store {
  jobs: JobStore;
  slots: SlotStore;
  firings: FiringStore;
  lease: LeaseStore;
  nodes: NodeStore;
  close(): void;
}

export type { JobSpec };
