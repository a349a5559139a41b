// The CLI's HTTP client: one method per API call of SPEC, with the bearer token, and the one place
// that maps failures to the exit codes scripts rely on (1 the server answered an error, 2 usage,
// 3 the server could not be reached).

export const EXIT = { ok: 0, serverError: 1, usage: 2, unreachable: 3 } as const;

/** A failure that ends the command with `exitCode`; `details` are extra lines for stderr. */
export class CliError extends Error {
  constructor(
    readonly exitCode: number,
    message: string,
    readonly details: string[] = [],
  ) {
    super(message);
  }
}

/** A bad command, flag or input file: exit 2 with the command's usage. */
export class UsageError extends CliError {
  constructor(message: string) {
    super(EXIT.usage, message);
  }
}

/** A 2xx answer: the body as the server sent it, and parsed (null when empty, as for a 204). */
export interface Reply<T = unknown> {
  status: number;
  text: string;
  json: T;
}

export interface Page<T> {
  items: T[];
  next_cursor: string | null;
}

export const DEFAULT_SERVER = "http://127.0.0.1:8080";
const REQUEST_TIMEOUT_MS = 30_000;

/** Checks and normalises a --server value (no trailing slash), or throws a UsageError. */
export function serverUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UsageError(`--server must be a URL such as ${DEFAULT_SERVER}, got "${raw}"`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new UsageError(`--server must be an http:// or https:// URL, got "${raw}"`);
  if (url.search || url.hash) throw new UsageError(`--server must not have a query or fragment, got "${raw}"`);
  return url.toString().replace(/\/+$/, "");
}

function describeNetworkError(err: unknown): string {
  if (err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError")) {
    return `no answer within ${REQUEST_TIMEOUT_MS / 1000} s`;
  }
  const code = (err as { code?: unknown } | null)?.code;
  const message = err instanceof Error ? err.message : String(err);
  return typeof code === "string" && !message.includes(code) ? `${code}: ${message}` : message;
}

/** The SPEC error shape {"error": {code, message, issues}} as a CliError (exit 1). */
function serverError(res: Response, json: unknown, text: string): CliError {
  const err = (json as { error?: { code?: unknown; message?: unknown; issues?: unknown } } | null)?.error;
  const status = `HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ""}`;
  if (err && typeof err.message === "string") {
    const issues = Array.isArray(err.issues) ? (err.issues as { path?: unknown; message?: unknown }[]) : [];
    const details = issues.map((i) => `  - ${i.path ? `${String(i.path)}: ` : ""}${String(i.message)}`);
    const code = typeof err.code === "string" ? `, ${err.code}` : "";
    return new CliError(EXIT.serverError, `${err.message} (${status}${code})`, details);
  }
  // Not cronwheel's error shape (a proxy, another server): show the start of what came back.
  const snippet = text.trim().slice(0, 200);
  return new CliError(EXIT.serverError, `the server answered ${status}${snippet ? `: ${snippet}` : ""}`);
}

export class Client {
  constructor(
    readonly server: string,
    readonly token: string | null,
  ) {}

  /** Sends one request; returns a 2xx reply or throws a CliError with the right exit code. */
  async call<T = unknown>(method: string, path: string, body?: unknown): Promise<Reply<T>> {
    const headers: Record<string, string> = { accept: "application/json" };
    if (body !== undefined) headers["content-type"] = "application/json";
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    let res: Response;
    let text: string;
    try {
      res = await fetch(this.server + path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        redirect: "manual",
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      text = await res.text();
    } catch (err) {
      throw new CliError(EXIT.unreachable, `cannot reach the server at ${this.server}: ${describeNetworkError(err)}`);
    }
    let json: unknown = null;
    let parsed = true;
    if (text.trim() !== "") {
      try {
        json = JSON.parse(text);
      } catch {
        parsed = false;
      }
    }
    if (res.status < 200 || res.status > 299) throw serverError(res, parsed ? json : null, text);
    if (!parsed) throw new CliError(EXIT.serverError, `the server answered HTTP ${res.status} with a body that is not JSON: ${text.slice(0, 200)}`);
    return { status: res.status, text, json: json as T };
  }

  // Jobs
  createJob = (job: unknown) => this.call<JobOut>("POST", "/v1/jobs", job);
  listJobs = (limit: number | null, cursor: string | null) => this.call<Page<JobOut>>("GET", `/v1/jobs${query({ limit, cursor })}`);
  getJob = (id: string) => this.call<JobOut>("GET", `/v1/jobs/${enc(id)}`);
  deleteJob = (id: string) => this.call<null>("DELETE", `/v1/jobs/${enc(id)}`);
  pauseJob = (id: string) => this.call<JobOut>("POST", `/v1/jobs/${enc(id)}/pause`);
  resumeJob = (id: string) => this.call<JobOut>("POST", `/v1/jobs/${enc(id)}/resume`);
  triggerJob = (id: string) => this.call<FiringOut>("POST", `/v1/jobs/${enc(id)}/trigger`);

  // Firings
  listFirings = (opts: { job: string | null; state: string | null; limit: number | null; cursor: string | null }) =>
    opts.job !== null
      ? this.call<Page<FiringOut>>("GET", `/v1/jobs/${enc(opts.job)}/firings${query({ limit: opts.limit, cursor: opts.cursor })}`)
      : this.call<Page<FiringOut>>("GET", `/v1/firings${query({ state: opts.state, limit: opts.limit, cursor: opts.cursor })}`);
  cancelFiring = (id: string) => this.call<{ outcome: string }>("POST", `/v1/firings/${enc(id)}/cancel`);
  retryFiring = (id: string) => this.call<FiringOut>("POST", `/v1/firings/${enc(id)}/retry`);

  preview = (params: Record<string, string | number | null | undefined>) => this.call<{ times: string[] }>("GET", `/v1/preview${query(params)}`);
}

const enc = encodeURIComponent;

function query(params: Record<string, string | number | null | undefined>): string {
  const q = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) if (value !== null && value !== undefined) q.set(key, String(value));
  const s = q.toString();
  return s ? `?${s}` : "";
}

/** The fields of a job (SPEC "A job", as GET /v1/jobs/{id} returns it) the CLI reads. */
export interface JobOut {
  id: string;
  schedule: {
    cron?: string;
    timezone?: string;
    every?: string;
    at?: string;
    dst_gap?: string;
    dst_overlap?: string;
    start_at?: string;
    end_at?: string;
  };
  target: { url: string; method?: string; timeout_ms?: number };
  retry?: { max_attempts?: number; initial_backoff_ms?: number; max_backoff_ms?: number };
  misfire?: { policy?: string; max_catchup?: number };
  concurrency?: { max?: number; overlap?: string; max_queue?: number };
  priority?: string;
  paused: boolean;
  next_fire_at: string | null;
  last_fired_at: string | null;
  created_at?: string | null;
  updated_at?: string | null;
  backlog?: number;
}

/** The fields of a firing (SPEC "Firings") the CLI reads. */
export interface FiringOut {
  id: string;
  job_id: string;
  scheduled_at: string | null;
  state: string;
  attempts: number;
  last_error: string | null;
  catchup?: boolean;
  manual?: boolean;
  waiting?: boolean;
}
