// Registration through POST /v1/jobs/batch, as a client with many jobs would do it: chunks of at
// most 10,000 (the API's limit), `parallel` requests in flight, each chunk's body built just
// before it is sent (a million jobs are never all in memory at once).

export const BATCH_MAX = 10_000;

export interface RegisterOptions {
  /** Jobs per request (at most BATCH_MAX). */
  chunk?: number;
  /** Requests in flight at once. */
  parallel?: number;
}

export interface RegisterFailure {
  first_job: number;
  status: number | null;
  error: string;
}

export interface RegisterResult {
  jobs: number;
  requests: number;
  /** From the first request sent to the last answer. */
  ms: number;
  /** Duration of each request (in completion order), ms. */
  request_ms: number[];
  /** Time spent building the request bodies in this process, ms (the client's share of `ms`). */
  build_ms: number;
  failures: RegisterFailure[];
}

/** Registers jobs 0..n-1 (`job(i)` builds one) on the node at `url`. Never throws on a refused request: see `failures`. */
export async function registerJobs(url: string, n: number, job: (i: number) => unknown, o: RegisterOptions = {}): Promise<RegisterResult> {
  const chunk = Math.min(BATCH_MAX, o.chunk ?? BATCH_MAX);
  const parallel = Math.max(1, o.parallel ?? 1);
  const requestMs: number[] = [];
  const failures: RegisterFailure[] = [];
  let buildMs = 0;
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < n) {
      const first = next;
      next = Math.min(n, first + chunk);
      const b0 = performance.now();
      const jobs = [];
      for (let i = first; i < next; i++) jobs.push(job(i));
      const body = JSON.stringify({ jobs });
      buildMs += performance.now() - b0;
      const t0 = performance.now();
      try {
        const r = await fetch(`${url}/v1/jobs/batch`, { method: "POST", headers: { "content-type": "application/json" }, body });
        const text = await r.text();
        if (r.status !== 201) failures.push({ first_job: first, status: r.status, error: text.slice(0, 500) });
      } catch (err) {
        failures.push({ first_job: first, status: null, error: String(err) });
      }
      requestMs.push(performance.now() - t0);
    }
  };
  const t0 = performance.now();
  await Promise.all(Array.from({ length: parallel }, worker));
  return {
    jobs: n,
    requests: requestMs.length,
    ms: Math.round(performance.now() - t0),
    request_ms: requestMs,
    build_ms: Math.round(buildMs),
    failures,
  };
}

/** Throws with the first refusal, for benches where a refused registration makes the run meaningless. */
export function assertRegistered(r: RegisterResult): void {
  const f = r.failures[0];
  if (f) throw new Error(`POST /v1/jobs/batch (jobs ${f.first_job}..) failed (${f.status ?? "no answer"}): ${f.error}; ${r.failures.length} request(s) failed`);
}
