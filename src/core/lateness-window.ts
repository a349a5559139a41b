// Lateness of recent first attempts on this node, kept for a few minutes so the status page can
// show p50/p99 "now" rather than since start (the /metrics histogram is cumulative). A ring of
// fixed size: adding is O(1) however many samples are kept (it is called once per delivery).

export class LatenessWindow {
  private readonly at: Float64Array;
  private readonly ms: Float64Array;
  /** Index of the oldest sample, and how many there are. */
  private head = 0;
  private count = 0;

  constructor(
    private readonly windowMs = 5 * 60_000,
    maxSamples = 50_000,
  ) {
    this.at = new Float64Array(maxSamples);
    this.ms = new Float64Array(maxSamples);
  }

  add(latenessMs: number, nowMs: number): void {
    const cap = this.at.length;
    const i = (this.head + this.count) % cap;
    this.at[i] = nowMs;
    this.ms[i] = latenessMs;
    if (this.count < cap) this.count++;
    else this.head = (this.head + 1) % cap; // full: the oldest is overwritten
  }

  /** p50 and p99 of the samples within the window, or null when there are none. */
  percentiles(nowMs: number): { p50: number; p99: number; count: number } | null {
    const cap = this.at.length;
    while (this.count > 0 && this.at[this.head]! < nowMs - this.windowMs) {
      this.head = (this.head + 1) % cap;
      this.count--;
    }
    if (this.count === 0) return null;
    const sorted = new Float64Array(this.count);
    for (let k = 0; k < this.count; k++) sorted[k] = this.ms[(this.head + k) % cap]!;
    sorted.sort();
    const pick = (p: number) => sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
    return { p50: pick(50), p99: pick(99), count: sorted.length };
  }
}
