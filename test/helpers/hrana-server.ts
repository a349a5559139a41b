// TEST STAND-IN FOR sqld: a minimal Hrana-over-HTTP server (JSON encoding, protocol v2, plus the v3
// JSON additions) backed by bun:sqlite, implementing only what @libsql/client 0.18's `http:` client
// sends. It exists so tests can exercise the client's REMOTE code path without a sqld binary.
//
// Implemented:
// - GET /, /health, /v2, /v3 → 200 (version probes); GET /v3-protobuf → 404, so a client probing for
//   protobuf falls back to JSON. (0.18 defaults to protocol 2 and posts straight to /v2/pipeline.)
// - POST /v2/pipeline and /v3/pipeline: {baton, requests} → {baton, base_url: null, results}, with
//   requests execute, batch (conditions ok/error/not/and/or/is_autocommit), sequence, describe,
//   store_sql, close_sql, get_autocommit and close. Values use the Hrana JSON encoding
//   ({type: null|integer (decimal string)|float|text|blob (base64)}); errors are {message, code}.
// - Streams: each stream (baton) owns one bun:sqlite connection to the same WAL database file, so an
//   interactive transaction stays open across HTTP requests. A fresh baton is issued on every
//   response (as sqld does); a stream idle for `streamIdleMs` (10 s, like sqld) is rolled back and
//   dropped, so an abandoned transaction cannot hold the write lock forever.
// - Busy timeout: SQLite's own busy_timeout is 0 on purpose. All connections live on this one JS
//   thread, so a synchronous busy wait would also block the request that holds the lock, a
//   deadlock until the timeout. Instead a statement failing with SQLITE_BUSY is retried
//   asynchronously (with backoff, up to `busyTimeoutMs`), letting other streams progress meanwhile.
//
// Not implemented: the protobuf encoding, cursors (/v3/cursor), the legacy /v1/execute and /v1/batch
// endpoints, authentication (any Authorization header is ignored), replication/base_url changes,
// `BEGIN READONLY` enforcement (plain SQLite parses "BEGIN TRANSACTION READONLY" as a deferred
// transaction named READONLY, so it works but is not read-only), mixing positional and named
// arguments in one statement, describe's parameter names (always null), and the multi-statement
// check on `execute` (bun:sqlite prepares the first statement only). Float arguments holding whole
// numbers are bound as INTEGER by bun:sqlite, where sqld binds them as REAL.

import { Database, type SQLQueryBindings } from "bun:sqlite";

type Value = { type: "null" } | { type: "integer"; value: string } | { type: "float"; value: number } | { type: "text"; value: string } | { type: "blob"; base64: string };
interface Stmt { sql?: string; sql_id?: number; args?: Value[]; named_args?: { name: string; value: Value }[]; want_rows?: boolean }
interface Step { condition?: Cond; stmt: Stmt }
interface Req { type: string; stmt?: Stmt; batch?: { steps: Step[] }; sql?: string; sql_id?: number }
type Cond = { type: "ok" | "error"; step: number } | { type: "not"; cond: Cond } | { type: "and" | "or"; conds: Cond[] } | { type: "is_autocommit" };
interface Stream { db: Database; sqls: Map<number, string>; lastUsed: number; totalChanges: bigint; closed: boolean }

/** An error that becomes a Hrana {message, code}. */
class HranaError extends Error {
  constructor(message: string, readonly code: string) { super(message); }
}

export interface HranaServer {
  url: string;
  stop(): void;
  /** HTTP requests received so far. */
  readonly requests: number;
  /** Streams (batons) currently open: leaks show up here. */
  readonly streams: number;
}

export async function startHranaServer(dbPath: string, opts: { busyTimeoutMs?: number; streamIdleMs?: number } = {}): Promise<HranaServer> {
  const busyTimeoutMs = opts.busyTimeoutMs ?? 5000;
  const streamIdleMs = opts.streamIdleMs ?? 10_000;
  const boot = new Database(dbPath, { create: true });
  boot.run("PRAGMA journal_mode=WAL"); // persistent in the file: every later connection uses WAL
  boot.close();

  const streams = new Map<string, Stream>();
  let nextBaton = 0;
  let requests = 0;
  let stopped = false;

  function openStream(): Stream {
    const db = new Database(dbPath, { safeIntegers: true });
    db.run("PRAGMA busy_timeout=0");
    db.run("PRAGMA synchronous=NORMAL");
    return { db, sqls: new Map(), lastUsed: Date.now(), totalChanges: 0n, closed: false };
  }
  function closeStream(s: Stream): void {
    s.closed = true;
    s.db.close(); // an open transaction is rolled back
  }

  const sweeper = setInterval(() => {
    for (const [baton, s] of streams) {
      if (Date.now() - s.lastUsed > streamIdleMs) {
        streams.delete(baton);
        closeStream(s);
      }
    }
  }, 1000);
  sweeper.unref?.();

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: async (req) => {
      requests++;
      const path = new URL(req.url).pathname.replace(/\/+$/, "");
      if (req.method === "GET") return ["", "/health", "/v2", "/v3"].includes(path) ? new Response("ok") : new Response("not found", { status: 404 });
      if (req.method !== "POST" || (path !== "/v2/pipeline" && path !== "/v3/pipeline")) {
        return new Response("not found", { status: 404 });
      }
      const body = (await req.json()) as { baton?: string | null; requests: Req[] };
      let stream: Stream;
      if (body.baton) {
        const s = streams.get(body.baton);
        if (!s) return jsonError(400, "Stream has expired or the baton is invalid", "STREAM_EXPIRED");
        streams.delete(body.baton); // one request per baton: a new one comes back with the response
        stream = s;
      } else {
        stream = openStream();
      }
      stream.lastUsed = Date.now();
      const results = [];
      for (const r of body.requests) {
        try {
          if (stream.closed) throw new HranaError("The stream is closed", "STREAM_CLOSED");
          results.push({ type: "ok", response: await handle(stream, r) });
        } catch (e) {
          results.push({ type: "error", error: toProtoError(e) });
        }
      }
      stream.lastUsed = Date.now();
      let baton: string | null = null;
      if (stopped && !stream.closed) closeStream(stream);
      if (!stream.closed) {
        baton = `${++nextBaton}.${crypto.randomUUID()}`;
        streams.set(baton, stream);
      }
      return Response.json({ baton, base_url: null, results }, { headers: { "content-type": "application/json" } });
    },
  });

  return {
    url: `http://127.0.0.1:${server.port}`,
    stop() {
      stopped = true;
      clearInterval(sweeper);
      server.stop(true);
      for (const s of streams.values()) closeStream(s);
      streams.clear();
    },
    get requests() {
      return requests;
    },
    get streams() {
      return streams.size;
    },
  };

  async function handle(s: Stream, r: Req): Promise<object> {
    switch (r.type) {
      case "execute":
        return { type: "execute", result: await execute(s, r.stmt!) };
      case "batch":
        return { type: "batch", result: await batch(s, r.batch!.steps) };
      case "sequence": {
        const sql = sqlOf(s, r);
        s.db.run(sql); // no busy retry: a partly applied sequence cannot be replayed safely
        s.totalChanges = s.db.query<{ t: bigint }, []>("SELECT total_changes() AS t").get()!.t;
        return { type: "sequence" };
      }
      case "describe": {
        const st = s.db.prepare(sqlOf(s, r));
        try {
          return {
            type: "describe",
            result: {
              params: Array.from({ length: st.paramsCount }, () => ({ name: null })),
              cols: st.columnNames.map((name) => ({ name, decltype: null })),
              is_explain: /^\s*EXPLAIN\b/i.test(sqlOf(s, r)),
              is_readonly: (st as unknown as { readonly: boolean }).readonly,
            },
          };
        } finally {
          st.finalize();
        }
      }
      case "store_sql":
        s.sqls.set(r.sql_id!, r.sql!);
        return { type: "store_sql" };
      case "close_sql":
        s.sqls.delete(r.sql_id!);
        return { type: "close_sql" };
      case "get_autocommit":
        return { type: "get_autocommit", is_autocommit: !s.db.inTransaction };
      case "close":
        closeStream(s);
        return { type: "close" };
      default:
        throw new HranaError(`Unsupported stream request type ${JSON.stringify(r.type)}`, "HRANA_PROTO_ERROR");
    }
  }

  async function batch(s: Stream, steps: Step[]) {
    const outcome: (boolean | undefined)[] = []; // true = ok, false = error, undefined = not run
    const step_results: unknown[] = [];
    const step_errors: unknown[] = [];
    for (const [i, step] of steps.entries()) {
      step_results.push(null);
      step_errors.push(null);
      if (step.condition && !evalCond(s, step.condition, outcome)) continue;
      try {
        step_results[i] = await execute(s, step.stmt);
        outcome[i] = true;
      } catch (e) {
        step_errors[i] = toProtoError(e);
        outcome[i] = false;
      }
    }
    return { step_results, step_errors };
  }

  async function execute(s: Stream, stmt: Stmt) {
    const sql = sqlOf(s, stmt);
    const named = stmt.named_args ?? [];
    const positional = (stmt.args ?? []).map(fromValue);
    if (named.length > 0 && positional.length > 0) throw new HranaError("Mixing positional and named arguments is not supported by this stand-in", "ARGS_INVALID");
    const args: SQLQueryBindings[] = named.length > 0 ? [Object.fromEntries(named.map((a) => [a.name, fromValue(a.value)])) as SQLQueryBindings] : (positional as SQLQueryBindings[]);
    return retryBusy(s, () => {
      const st = s.db.prepare(sql);
      try {
        const rows = st.values(...args) as unknown[][];
        const readonly = (st as unknown as { readonly: boolean }).readonly;
        let affected = 0n;
        let lastRowid: string | null = null;
        if (!readonly) {
          const c = s.db.query("SELECT changes() AS c, total_changes() AS t, last_insert_rowid() AS r").get() as { c: bigint; t: bigint; r: bigint };
          if (c.t !== s.totalChanges) affected = c.c; // DDL leaves changes() stale; total_changes() tells
          s.totalChanges = c.t;
          lastRowid = String(c.r);
        }
        return {
          cols: st.columnNames.map((name, i) => ({ name, decltype: st.declaredTypes[i] ?? null })),
          rows: stmt.want_rows === false ? [] : rows.map((row) => row.map(toValue)),
          affected_row_count: Number(affected),
          last_insert_rowid: lastRowid,
        };
      } finally {
        st.finalize();
      }
    });
  }

  /** Busy timeout without blocking the thread: retry on SQLITE_BUSY (never on BUSY_SNAPSHOT, which retrying cannot fix). */
  async function retryBusy<T>(s: Stream, fn: () => T): Promise<T> {
    const deadline = Date.now() + busyTimeoutMs;
    for (let delay = 1; ; delay = Math.min(delay * 2, 25)) {
      const inTx = s.db.inTransaction;
      try {
        return fn();
      } catch (e) {
        const busy = (e as { code?: string }).code === "SQLITE_BUSY";
        // If the failure ended the transaction, a retry would run outside it: give up instead.
        if (!busy || Date.now() >= deadline || s.closed || inTx !== s.db.inTransaction) throw e;
      }
      await Bun.sleep(delay);
      if (s.closed) throw new HranaError("The stream was closed while waiting for a lock", "STREAM_CLOSED");
    }
  }
}

function sqlOf(s: Stream, x: { sql?: string | null; sql_id?: number | null }): string {
  if (typeof x.sql === "string") return x.sql;
  const sql = x.sql_id == null ? undefined : s.sqls.get(x.sql_id);
  if (sql === undefined) throw new HranaError(`SQL text ${x.sql_id} is not stored on this stream`, "SQL_NOT_FOUND");
  return sql;
}

function evalCond(s: Stream, c: Cond, outcome: (boolean | undefined)[]): boolean {
  switch (c.type) {
    case "ok": return outcome[c.step] === true;
    case "error": return outcome[c.step] === false;
    case "not": return !evalCond(s, c.cond, outcome);
    case "and": return c.conds.every((x) => evalCond(s, x, outcome));
    case "or": return c.conds.some((x) => evalCond(s, x, outcome));
    case "is_autocommit": return !s.db.inTransaction;
    default: throw new HranaError(`Unknown batch condition ${JSON.stringify((c as { type: unknown }).type)}`, "HRANA_PROTO_ERROR");
  }
}

function fromValue(v: Value): null | bigint | number | string | Uint8Array {
  switch (v.type) {
    case "null": return null;
    case "integer": return BigInt(v.value);
    case "float": return v.value;
    case "text": return v.value;
    case "blob": return new Uint8Array(Buffer.from(v.base64, "base64"));
    default: throw new HranaError(`Unknown value type ${JSON.stringify((v as { type: unknown }).type)}`, "HRANA_PROTO_ERROR");
  }
}

function toValue(v: unknown): Value {
  if (v === null || v === undefined) return { type: "null" };
  if (typeof v === "bigint") return { type: "integer", value: v.toString() };
  if (typeof v === "number") return { type: "float", value: v };
  if (typeof v === "string") return { type: "text", value: v };
  if (v instanceof Uint8Array) return { type: "blob", base64: Buffer.from(v).toString("base64") };
  throw new Error(`cannot encode SQLite value ${String(v)}`);
}

function toProtoError(e: unknown): { message: string; code: string } {
  if (e instanceof HranaError) return { message: e.message, code: e.code };
  const err = e as { message?: string; code?: string };
  return { message: err.message ?? String(e), code: err.code ?? "SQLITE_ERROR" };
}

function jsonError(status: number, message: string, code: string): Response {
  return new Response(JSON.stringify({ message, code }), { status, headers: { "content-type": "application/json" } });
}
