// Lateness of recent first attempts on this node, kept for a few minutes so the status page can
// show p50/p99 "now" rather than since start (the /metrics histogram is cumulative).

export class LatenessWindow {
  private readonly at: number[] = [];
  private readonly ms: number[] = [];

  constructor(
    private readonly windowMs = 5 * 60_000,
    private readonly maxSamples = 50_000,
  ) {}

  add(latenessMs: number, nowMs: number): void {
    this.at.push(nowMs);
    this.ms.push(latenessMs);
    if (this.at.length > this.maxSamples) this.drop(this.at.length - this.maxSamples);
  }

  /** p50 and p99 of the samples within the window, or null when there are none. */
  percentiles(nowMs: number): { p50: number; p99: number; count: number } | null {
    let old = 0;
    while (old < this.at.length && this.at[old]! < nowMs - this.windowMs) old++;
    this.drop(old);
    if (this.ms.length === 0) return null;
    const sorted = [...this.ms].sort((a, b) => a - b);
    const pick = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
    return { p50: pick(50), p99: pick(99), count: sorted.length };
  }

  private drop(n: number): void {
    this.at.splice(0, n);
    this.ms.splice(0, n);
  }
}
