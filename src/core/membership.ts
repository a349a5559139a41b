// Cluster membership: each node heartbeats its row, and reads everyone's. A node is alive while
// its last heartbeat, on the database's clock, is younger than aliveMs. Deliveries are spread
// over the live nodes with a consistent hash ring by job id, so a job's firings normally go to
// one node and a node joining or leaving moves only its own share.

import HashRing from "hashring";
import type { Clock } from "./clock.ts";
import type { Logger } from "./log.ts";
import type { NodeRecord, NodeStore } from "./ports.ts";

export interface MembershipOptions {
  nodeId: string;
  address: string;
  heartbeatMs: number;
  aliveMs: number;
}

export interface MemberView extends NodeRecord {
  alive: boolean;
}

/** Rows of nodes not seen for a day are deleted; until then they are listed as not alive. */
const PRUNE_AFTER_MS = 24 * 3_600_000;

export class Membership {
  private live: string[];
  private ring: HashRing;
  private view: MemberView[] = [];
  private cancelTimer: (() => void) | null = null;
  private running = false;
  private readonly listeners: ((live: string[]) => void)[] = [];
  private beats = 0;

  constructor(
    private readonly store: NodeStore,
    private readonly clock: Clock,
    private readonly opts: MembershipOptions,
    private readonly log: Logger,
  ) {
    this.live = [opts.nodeId];
    this.ring = new HashRing(this.live);
  }

  async start(): Promise<void> {
    this.running = true;
    await this.beat();
    this.schedule();
  }

  /** Leaves the cluster on purpose: others drop this node at once instead of after aliveMs. */
  async stop(): Promise<void> {
    this.running = false;
    this.cancelTimer?.();
    await this.store.remove(this.opts.nodeId).catch((err: unknown) => this.log.warn("leaving the cluster failed", { err: String(err) }));
  }

  onChange(listener: (live: string[]) => void): void {
    this.listeners.push(listener);
  }

  liveIds(): string[] {
    return this.live;
  }

  /** The node for this key (a job id, or a job id and instant), as this node sees the cluster. */
  ownerOf(key: string): string {
    return this.ring.get(key) ?? this.opts.nodeId;
  }

  addressOf(nodeId: string): string | null {
    return this.view.find((n) => n.id === nodeId)?.address ?? null;
  }

  members(): MemberView[] {
    return this.view;
  }

  /** One heartbeat and read; exposed for tests. */
  async beat(): Promise<void> {
    try {
      await this.store.heartbeat(this.opts.nodeId, this.opts.address);
      const { nodes, dbNowMs } = await this.store.list();
      this.view = nodes.map((n) => ({ ...n, alive: dbNowMs - n.lastSeenAt <= this.opts.aliveMs }));
      const live = this.view.filter((n) => n.alive).map((n) => n.id);
      if (!live.includes(this.opts.nodeId)) live.push(this.opts.nodeId);
      live.sort();
      if (live.join(",") !== this.live.join(",")) {
        this.log.info("membership changed", { live, was: this.live });
        this.live = live;
        this.ring = new HashRing(live);
        for (const l of this.listeners) l(live);
      }
      if (++this.beats % 600 === 0) await this.store.prune(PRUNE_AFTER_MS);
    } catch (err) {
      this.log.warn("heartbeat failed", { err: String(err) });
    }
  }

  private schedule(): void {
    if (!this.running) return;
    this.cancelTimer = this.clock.setTimer(this.opts.heartbeatMs, () => {
      void this.beat().finally(() => this.schedule());
    });
  }
}
