// Admission of due firings against their job's concurrency cap, which lives in the store so it
// holds across nodes. Firings that must wait stay claimed by this node, listed here, and are
// offered again whenever a slot of their job is freed here and every second (a slot freed on
// another node). Jobs with overlap "allow" have no cap and skip the store.

import type { Logger } from "./log.ts";
import type { Firing, Job } from "./model.ts";
import { decideOverlap } from "./overlap.ts";
import type { AdmissionRequest, Store } from "./ports.ts";

export class Admission {
  private readonly waiting = new Map<string, Firing>();

  constructor(
    private readonly store: Store,
    private readonly nodeId: string,
    /** A slot counts while its node's heartbeat is younger than this. */
    private readonly nodeTtlMs: number,
    private readonly now: () => number,
    private readonly log: Logger,
    private readonly onSkip: () => void = () => {},
  ) {}

  get waitingCount(): number {
    return this.waiting.size;
  }

  /** The firings that may run now; the others now wait here, or were skipped in the store. */
  async admit(firings: Firing[], jobOf: (jobId: string) => Job | undefined, offeredAgain = false): Promise<Firing[]> {
    const run: Firing[] = [];
    const requests: AdmissionRequest[] = [];
    const byId = new Map<string, Firing>();
    for (const f of firings) {
      const c = jobOf(f.jobId)?.spec.concurrency;
      if (!c) {
        // Its job is not known here (callers pass only firings whose job they read): keep it
        // waiting rather than drop it, so it is offered again and never left claimed unseen.
        this.waiting.set(f.id, f);
        continue;
      }
      if (c.overlap === "allow") {
        run.push(f);
        continue;
      }
      byId.set(f.id, f);
      requests.push({
        firingId: f.id,
        jobId: f.jobId,
        scheduledAt: f.scheduledAt,
        waiting: offeredAgain || f.waiting,
        max: c.max,
        overlap: c.overlap,
        maxQueue: c.max_queue,
        catchup: f.catchup,
      });
    }
    if (requests.length === 0) return run;
    const results = await this.store.slots.admit(this.nodeId, requests, this.nodeTtlMs, this.now(), decideOverlap);
    for (const [id, r] of results) {
      const f = byId.get(id)!;
      if (r.kind === "run") run.push(f);
      else if (r.kind === "wait") this.waiting.set(id, f);
      else if (r.kind === "skip") {
        this.onSkip();
        this.log.debug("firing skipped", { firing_id: id, job_id: f.jobId, reason: r.reason });
      }
    }
    return run.sort((a, b) => a.scheduledAt - b.scheduledAt);
  }

  /** Offers waiting firings (of one job, or all) a slot again. */
  async retry(jobOf: (jobId: string) => Job | undefined, jobId?: string): Promise<Firing[]> {
    const offered = this.waitingFirings(jobId);
    if (offered.length === 0) return [];
    // Out of the list while being offered, so two overlapping offers cannot both start one firing.
    for (const f of offered) this.waiting.delete(f.id);
    try {
      return await this.admit(offered, jobOf, true);
    } catch (err) {
      for (const f of offered) this.waiting.set(f.id, f);
      throw err;
    }
  }

  /** The firings waiting here (of one job, or all). */
  waitingFirings(jobId?: string): Firing[] {
    return [...this.waiting.values()].filter((f) => jobId === undefined || f.jobId === jobId);
  }

  drop(firingId: string): void {
    this.waiting.delete(firingId);
  }

  /** Everything waiting, removed (shutdown hands these back to the store). */
  takeAll(): Firing[] {
    const all = [...this.waiting.values()];
    this.waiting.clear();
    return all;
  }

  release(firingIds: string[]): Promise<void> {
    return this.store.slots.release(this.nodeId, firingIds);
  }
}
