// A real webhook receiver on 127.0.0.1 for tests and benches: records every request with its
// arrival time and answers with what the test scripts (per job id, in order), default 200.

export interface Received {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: string;
  arrivedAt: number;
  /** When the answer was sent (or the request aborted); null while in flight. */
  finishedAt: number | null;
}

export interface Reply {
  status: number;
  headers?: Record<string, string>;
  /** Hold the answer this long (a slow handler). */
  delayMs?: number;
}

export class Receiver {
  readonly received: Received[] = [];
  private readonly scripts = new Map<string, Reply[]>();
  private readonly waiters: { pred: (r: Received[]) => boolean; resolve: () => void }[] = [];
  private server: ReturnType<typeof Bun.serve> | null = null;
  /** Requests whose connection was closed before the answer (aborted by the sender). */
  aborted = 0;

  async start(): Promise<string> {
    this.server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      idleTimeout: 0,
      fetch: async (req) => {
        const body = await req.text();
        const rec: Received = {
          method: req.method,
          path: new URL(req.url).pathname,
          headers: Object.fromEntries(req.headers.entries()),
          body,
          arrivedAt: Date.now(),
          finishedAt: null,
        };
        this.received.push(rec);
        this.notify();
        const jobId = rec.headers["cronwheel-job-id"] ?? "";
        const reply = this.scripts.get(jobId)?.shift() ?? { status: 200 };
        if (reply.delayMs) {
          const aborted = await new Promise<boolean>((resolve) => {
            const t = setTimeout(() => resolve(false), reply.delayMs);
            req.signal.addEventListener("abort", () => {
              clearTimeout(t);
              resolve(true);
            });
          });
          if (aborted) {
            this.aborted++;
            this.notify();
          }
        }
        rec.finishedAt = Date.now();
        return new Response("ok", { status: reply.status, headers: reply.headers });
      },
    });
    return this.url;
  }

  get url(): string {
    return `http://127.0.0.1:${this.server!.port}`;
  }

  /** Replies for the next requests of one job, in order; afterwards 200. */
  script(jobId: string, replies: Reply[]): void {
    this.scripts.set(jobId, replies);
  }

  forJob(jobId: string): Received[] {
    return this.received.filter((r) => r.headers["cronwheel-job-id"] === jobId);
  }

  /** Most requests of one job that were in flight at the same time. */
  maxConcurrent(jobId: string): number {
    const events = this.forJob(jobId).flatMap((r) => [
      [r.arrivedAt, 1],
      [r.finishedAt ?? Infinity, -1],
    ]);
    events.sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!); // an end and a start at the same ms do not overlap
    let now = 0;
    let max = 0;
    for (const [, d] of events) max = Math.max(max, (now += d!));
    return max;
  }

  /** Resolves when pred holds for the requests so far; rejects after timeoutMs. */
  waitFor(pred: (r: Received[]) => boolean, timeoutMs = 10_000): Promise<void> {
    if (pred(this.received)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`receiver: condition not met in ${timeoutMs} ms (${this.received.length} received)`)), timeoutMs);
      this.waiters.push({ pred, resolve: () => { clearTimeout(timer); resolve(); } });
    });
  }

  private notify(): void {
    for (let i = this.waiters.length - 1; i >= 0; i--) {
      const w = this.waiters[i]!;
      if (w.pred(this.received)) {
        this.waiters.splice(i, 1);
        w.resolve();
      }
    }
  }

  stop(): void {
    this.server?.stop(true);
  }
}
