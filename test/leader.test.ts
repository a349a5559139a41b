// Leadership in virtual time against an in-memory lease with the same rules as the store's:
// acquire only after expiry (epoch + 1), renew only at our epoch, expiry on the "database" clock.

import { describe, expect, test } from "bun:test";
import { VirtualClock } from "../src/core/clock.ts";
import { Leader } from "../src/core/leader.ts";
import { silentLogger } from "../src/core/log.ts";
import type { Fence, LeaseInfo, LeaseStore } from "../src/core/ports.ts";

class MemoryLease implements LeaseStore {
  holder: string | null = null;
  epoch = 0;
  expiresAt = 0;
  failing = false;
  constructor(private readonly clock: VirtualClock) {}
  private check() {
    if (this.failing) throw new Error("SQLITE_BUSY");
  }
  async tryAcquire(nodeId: string, ttlMs: number): Promise<LeaseInfo | null> {
    this.check();
    const now = this.clock.now();
    if (this.expiresAt > now) return null;
    this.holder = nodeId;
    this.epoch++;
    this.expiresAt = now + ttlMs;
    return { holder: nodeId, epoch: this.epoch, expiresAt: this.expiresAt, dbNowMs: now };
  }
  async renew(f: Fence, ttlMs: number): Promise<boolean> {
    this.check();
    const now = this.clock.now();
    if (this.holder !== f.nodeId || this.epoch !== f.epoch || this.expiresAt <= now) return false;
    this.expiresAt = now + ttlMs;
    return true;
  }
  async release(f: Fence): Promise<void> {
    if (this.holder === f.nodeId && this.epoch === f.epoch) this.expiresAt = 0;
  }
  async read(): Promise<LeaseInfo> {
    return { holder: this.holder, epoch: this.epoch, expiresAt: this.expiresAt, dbNowMs: this.clock.now() };
  }
}

describe("Leader", () => {
  test("one of two nodes leads; the other takes over with a higher epoch after the lease lapses", async () => {
    const clock = new VirtualClock(1_000_000);
    const lease = new MemoryLease(clock);
    const a = new Leader(lease, clock, { nodeId: "a", leaseMs: 3000 }, silentLogger);
    const b = new Leader(lease, clock, { nodeId: "b", leaseMs: 3000 }, silentLogger);
    await a.tick();
    await b.tick();
    expect(a.current()?.epoch).toBe(1);
    expect(b.current()).toBeNull();
    // a renews every second for a while: b never gets in.
    for (let i = 0; i < 10; i++) {
      await clock.advance(1000);
      await a.tick();
      await b.tick();
      expect(a.current()).not.toBeNull();
      expect(b.current()).toBeNull();
    }
    // a stops renewing (paused). Its own deadline passes before the store's expiry.
    let lostAt = -1;
    a.onChange((e) => { if (e.kind === "lost") lostAt = clock.now(); });
    const renewedAt = clock.now();
    for (let t = 0; t < 3000; t += 100) {
      await clock.advance(100);
      a.current();
      await b.tick();
      if (b.current()) break;
    }
    expect(lostAt).toBeGreaterThan(0);
    expect(lostAt).toBeLessThan(renewedAt + 3000);
    expect(b.current()?.epoch).toBe(2);
    // When a wakes, its renewal is rejected and it stays a follower.
    await a.tick();
    expect(a.current()).toBeNull();
    expect(lease.holder).toBe("b");
  });

  test("a failing store drops leadership once the local deadline passes", async () => {
    const clock = new VirtualClock(0);
    const lease = new MemoryLease(clock);
    const a = new Leader(lease, clock, { nodeId: "a", leaseMs: 1000 }, silentLogger);
    await a.tick();
    expect(a.current()).not.toBeNull();
    lease.failing = true;
    await clock.advance(500);
    await a.tick();
    expect(a.current()).not.toBeNull(); // still within the lease: keep leading
    await clock.advance(450);
    await a.tick();
    expect(a.current()).toBeNull(); // deadline (1000 - safety margin) passed
  });

  test("stop releases the lease so another node takes over at once", async () => {
    const clock = new VirtualClock(0);
    const lease = new MemoryLease(clock);
    const a = new Leader(lease, clock, { nodeId: "a", leaseMs: 5000 }, silentLogger);
    const b = new Leader(lease, clock, { nodeId: "b", leaseMs: 5000 }, silentLogger);
    await a.tick();
    await a.stop();
    await b.tick();
    expect(b.current()?.epoch).toBe(2);
  });

  test("stepDown on a fenced write rejection, only for the epoch we hold", async () => {
    const clock = new VirtualClock(0);
    const a = new Leader(new MemoryLease(clock), clock, { nodeId: "a", leaseMs: 5000 }, silentLogger);
    await a.tick();
    a.stepDown(0, "a write of an older term");
    expect(a.current()).not.toBeNull();
    a.stepDown(a.current()!.epoch, "stale epoch");
    expect(a.current()).toBeNull();
  });
});
