// Runs an async task at most once at a time. A request while it runs is not dropped and not
// stacked: it makes exactly one more run follow, so nothing asked for during a run is missed.
// Long runs over the synchronous embedded store also yield between batches (yieldToEventLoop).

/** Lets timers and I/O run: awaiting the embedded store alone never gives the event loop a turn. */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export class SingleFlight {
  private current: Promise<void> | null = null;
  private again = false;

  /** `settled` runs when a run ends with no further run requested. */
  constructor(
    private readonly task: () => Promise<void>,
    private readonly settled: () => void = () => {},
  ) {}

  get running(): boolean {
    return this.current !== null;
  }

  trigger(): void {
    if (this.current) {
      this.again = true;
      return;
    }
    this.current = this.task().finally(() => {
      this.current = null;
      if (this.again) {
        this.again = false;
        this.trigger();
      } else {
        this.settled();
      }
    });
  }

  /** Resolves once no run is in progress (a queued rerun included). */
  async idle(): Promise<void> {
    while (this.current) await this.current;
  }
}
