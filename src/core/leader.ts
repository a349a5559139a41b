// Leadership by lease. States: follower (no fence) -> leader (fence = our node id + epoch) ->
// follower again when a renewal fails, the store rejects a fenced write, or our own monotonic
// deadline passes. The deadline is measured from *before* the renewal was sent, and the store
// measures expiry from when it ran the statement, so we always give up before the store would
// hand the lease to someone else. A paused process wakes with its monotonic clock moved on and
// finds itself no longer leader; any write it already had in flight is still fenced by epoch.

import type { Clock } from "./clock.ts";
import type { Fence, LeaseStore } from "./ports.ts";
import type { Logger } from "./log.ts";

export interface LeaderOptions {
  nodeId: string;
  leaseMs: number;
}

export type LeadershipListener = (event: { kind: "elected" | "lost"; epoch: number; reason?: string }) => void;

export class Leader {
  private fence: Fence | null = null;
  private deadlineMono = 0;
  private stopTimer: (() => void) | null = null;
  private running = false;
  /** Set by stop(): a round still in flight must not take the lease afterwards. */
  private stopped = false;
  private readonly listeners: LeadershipListener[] = [];
  readonly renewEveryMs: number;
  private readonly safetyMs: number;

  constructor(
    private readonly lease: LeaseStore,
    private readonly clock: Clock,
    private readonly opts: LeaderOptions,
    private readonly log: Logger,
  ) {
    this.renewEveryMs = Math.max(50, Math.floor(opts.leaseMs / 3));
    this.safetyMs = Math.max(50, Math.floor(opts.leaseMs / 10));
  }

  onChange(listener: LeadershipListener): void {
    this.listeners.push(listener);
  }

  /** Our fence while we may act as leader, judged on our monotonic clock; null otherwise. */
  current(): Fence | null {
    if (this.fence && this.clock.monoNow() >= this.deadlineMono) this.lose("lease deadline passed locally");
    return this.fence;
  }

  /**
   * The store rejected a write fenced with `epoch`: someone else holds a newer one. A write of
   * an older term of ours says nothing about the term we hold now.
   */
  stepDown(epoch: number, reason: string): void {
    if (this.fence && this.fence.epoch === epoch) this.lose(reason);
  }

  start(): void {
    this.running = true;
    void this.loop();
  }

  async stop(): Promise<void> {
    this.running = false;
    this.stopped = true;
    this.stopTimer?.();
    const fence = this.fence;
    if (fence) {
      this.lose("shutting down");
      // Released on purpose so a planned restart fails over at once instead of after the TTL.
      await this.lease.release(fence).catch((err: unknown) => this.log.warn("lease release failed", { err: String(err) }));
    }
  }

  /** One renew-or-acquire round; exposed for tests that drive it step by step. */
  async tick(): Promise<void> {
    const startedMono = this.clock.monoNow();
    try {
      if (this.current()) {
        const ok = await this.lease.renew(this.fence!, this.opts.leaseMs);
        if (!this.fence) return; // lost while the renewal was in flight
        if (ok) this.deadlineMono = startedMono + this.opts.leaseMs - this.safetyMs;
        else this.lose("renewal rejected: lease expired or taken");
        return;
      }
      const info = await this.lease.tryAcquire(this.opts.nodeId, this.opts.leaseMs);
      if (info && !this.stopped) {
        this.fence = { nodeId: this.opts.nodeId, epoch: info.epoch };
        this.deadlineMono = startedMono + this.opts.leaseMs - this.safetyMs;
        this.log.info("leadership won", { epoch: info.epoch });
        for (const l of this.listeners) l({ kind: "elected", epoch: info.epoch });
      }
    } catch (err) {
      // A busy or unreachable store is expected; current() drops us once the deadline passes.
      this.log.warn("lease round failed", { err: String(err) });
    }
  }

  private lose(reason: string): void {
    const epoch = this.fence?.epoch ?? 0;
    this.fence = null;
    this.log.warn("leadership lost", { epoch, reason });
    for (const l of this.listeners) l({ kind: "lost", epoch, reason });
  }

  private async loop(): Promise<void> {
    while (this.running) {
      await this.tick();
      if (!this.running) return;
      await new Promise<void>((resolve) => {
        this.stopTimer = this.clock.setTimer(this.renewEveryMs, resolve);
      });
    }
  }
}
