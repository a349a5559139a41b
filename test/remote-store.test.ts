// The Store contract (helpers/store-contract.ts) over the REMOTE path of @libsql/client (Hrana over
// HTTP) against the sqld stand-in in helpers/hrana-server.ts, plus remote-only checks: migrations and
// lock waits over HTTP, the stand-in itself, and a real `cronwheel serve` delivering webhooks from it.

import { afterEach, describe, expect, test } from "bun:test";
import { createClient } from "@libsql/client";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Store } from "../src/core/ports.ts";
import { openStore } from "../src/store/index.ts";
import { startHranaServer, type HranaServer } from "./helpers/hrana-server.ts";
import { eventually, startServe, type ServeProcess } from "./helpers/process.ts";
import { Receiver } from "./helpers/receiver.ts";
import { job, storeContract } from "./helpers/store-contract.ts";

let servers: HranaServer[] = [];
let dirs: string[] = [];
let stores: Store[] = [];
let serve: ServeProcess | null = null;
let receiver: Receiver | null = null;
let contractServer: { server: HranaServer; afterOpen: number } | null = null; // the contract's current one

afterEach(async () => {
  if (serve) {
    serve.proc.kill("SIGKILL");
    await serve.proc.exited;
    serve = null;
  }
  receiver?.stop();
  receiver = null;
  for (const s of stores) s.close();
  stores = [];
  for (const s of servers) s.stop();
  servers = [];
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
  contractServer = null;
});

async function hrana(): Promise<HranaServer> {
  const dir = mkdtempSync(join(tmpdir(), "cronwheel-hrana-"));
  dirs.push(dir);
  const server = await startHranaServer(join(dir, "cw.db"));
  servers.push(server);
  return server;
}

/** A store opened through the http:// URL: every statement crosses the Hrana server. */
async function fresh(): Promise<{ s: Store; server: HranaServer }> {
  const server = await hrana();
  const s = await openStore(server.url);
  stores.push(s);
  return { s, server };
}

/** The contract's store: opened through the http:// URL of a fresh stand-in, checked at the end. */
async function openRemote(): Promise<Store> {
  const server = await hrana();
  const s = await openStore(server.url);
  expect(server.requests).toBeGreaterThan(0); // the migrations crossed the server
  contractServer = { server, afterOpen: server.requests };
  return s;
}

/** Every scenario's statements crossed the server, and no stream (transaction) is left open. */
async function remoteSettled(): Promise<void> {
  const { server, afterOpen } = contractServer!;
  expect(server.requests).toBeGreaterThan(afterOpen);
  await eventually(async () => server.streams === 0, 2000, "every stream to be closed");
}

describe("store contract: remote (Hrana over HTTP)", () => storeContract(openRemote, remoteSettled));

describe("remote store (Hrana over HTTP)", () => {
  test("migrations ran over HTTP, and the lease is judged on the database clock", async () => {
    const { s, server } = await fresh();
    expect(server.requests).toBeGreaterThan(0);
    const before = server.requests;
    const info = await s.lease.read();
    expect(info.holder).toBeNull();
    expect(Math.abs(info.dbNowMs - Date.now())).toBeLessThan(2000); // unixepoch('subsec') works
    const got = (await s.lease.tryAcquire("n1", 3000))!;
    expect(got.epoch).toBe(1);
    expect(got.expiresAt - got.dbNowMs).toBe(3000);
    await Bun.sleep(20);
    expect(await s.lease.renew({ nodeId: "n1", epoch: 1 }, 3000)).toBe(true);
    const after = await s.lease.read();
    expect(after.expiresAt).toBeGreaterThan(got.expiresAt);
    expect(await s.lease.renew({ nodeId: "n2", epoch: 1 }, 3000)).toBe(false);
    expect(server.requests).toBeGreaterThan(before);
  });

  test("a writer waits for another stream's open write transaction instead of failing", async () => {
    const { s, server } = await fresh();
    const other = createClient({ url: server.url });
    const tx = await other.transaction("write");
    await tx.execute({ sql: "UPDATE leases SET holder = 'tx' WHERE name = 'leader'", args: [] });
    const waiting = s.jobs.insert(job("w", 1000)); // SQLITE_BUSY, retried by the server
    await Bun.sleep(300);
    await tx.commit();
    expect(await waiting).toBe(true);
    expect((await s.lease.read()).holder).toBe("tx");
    other.close();
  });

  test("the stand-in itself: values round-trip, a failing batch step rolls the batch back, autocommit state", async () => {
    const server = await hrana();
    const c = createClient({ url: server.url, intMode: "bigint" });
    const blob = new Uint8Array([0, 1, 254, 255]);
    const rs = await c.execute({ sql: "SELECT ? AS i, ? AS f, ? AS t, ? AS b, ? AS n", args: [9007199254740993n, 1.5, "héllo", blob, null] });
    expect(rs.columns).toEqual(["i", "f", "t", "b", "n"]);
    const row = rs.rows[0]!;
    expect([row.i, row.f, row.t, new Uint8Array(row.b as ArrayBuffer), row.n]).toEqual([9007199254740993n, 1.5, "héllo", blob, null]);
    await c.execute("CREATE TABLE t (x INTEGER PRIMARY KEY)");
    const ins = await c.execute({ sql: "INSERT INTO t VALUES (?), (?)", args: [41, 42] });
    expect([ins.rowsAffected, ins.lastInsertRowid]).toEqual([2, 42n]);
    expect((await c.execute("CREATE TABLE u (y)")).rowsAffected).toBe(0); // DDL: not the previous count
    await expect(c.batch([{ sql: "INSERT INTO t VALUES (?)", args: [1] }, { sql: "INSERT INTO t VALUES (?)", args: [41] }, { sql: "INSERT INTO t VALUES (?)", args: [2] }], "write")).rejects.toThrow(/UNIQUE/);
    expect((await c.execute("SELECT x FROM t ORDER BY x")).rows.map((r) => r.x)).toEqual([41n, 42n]);
    // get_autocommit and the is_autocommit condition (protocol 3 features; the 0.18 client speaks 2).
    const pipeline = async (baton: string | null, requests: unknown[]) =>
      (await (await fetch(`${server.url}/v3/pipeline`, { method: "POST", body: JSON.stringify({ baton, requests }) })).json()) as any;
    const stmt = (sql: string) => ({ sql, args: [], want_rows: true });
    const a = await pipeline(null, [{ type: "execute", stmt: stmt("BEGIN") }, { type: "get_autocommit" }]);
    expect(a.results[1].response.is_autocommit).toBe(false);
    const b = await pipeline(a.baton, [
      { type: "batch", batch: { steps: [
        { stmt: stmt("ROLLBACK") },
        { condition: { type: "is_autocommit" }, stmt: stmt("SELECT 1") },
        { condition: { type: "not", cond: { type: "ok", step: 0 } }, stmt: stmt("SELECT 2") },
        { condition: { type: "and", conds: [{ type: "ok", step: 1 }, { type: "not", cond: { type: "error", step: 2 } }] }, stmt: stmt("SELECT nope") },
      ] } },
      { type: "close" },
    ]);
    const res = b.results[0].response.result;
    expect(res.step_results.map((r: unknown) => r !== null)).toEqual([true, true, false, false]);
    expect(res.step_errors[3].code).toBe("SQLITE_ERROR");
    expect(b.baton).toBeNull();
    expect(server.streams).toBe(0);
    c.close();
  });

  test("a cronwheel node on the remote store leads and delivers a one-shot and a per-second cron", async () => {
    const server = await hrana();
    receiver = new Receiver();
    await receiver.start();
    serve = await startServe(server.url, ["--node-id", "remote-1", "--lease-ms", "1000"]);
    await eventually(async () => (await serve!.api("GET", "/v1/cluster")).json?.leader === "remote-1", 10_000, "remote-1 to lead");

    const at = new Date(Date.now() + 1500).toISOString();
    const once = await serve.api("POST", "/v1/jobs", { id: "once", schedule: { at }, target: { url: `${receiver.url}/hook` } });
    expect(once.status).toBe(201);
    const cron = await serve.api("POST", "/v1/jobs", { id: "tick", schedule: { cron: "* * * * * *" }, target: { url: `${receiver.url}/hook` } });
    expect(cron.status).toBe(201);

    const seconds = () => new Set(receiver!.forJob("tick").map((r) => Date.parse(r.headers["cronwheel-scheduled-at"]!)));
    const hasRun = (n: number) => {
      const set = seconds();
      return [...set].some((t) => Array.from({ length: n }, (_, k) => t + k * 1000).every((x) => set.has(x)));
    };
    await receiver.waitFor((r) => r.some((x) => x.headers["cronwheel-job-id"] === "once") && hasRun(3), 15_000);
    await Bun.sleep(1200); // a second delivery of the one-shot would show up here
    const got = receiver.forJob("once");
    expect(got).toHaveLength(1);
    expect(got[0]!.headers["cronwheel-scheduled-at"]).toBe(at);
    expect(hasRun(3)).toBe(true);
    const ticks = receiver.forJob("tick").map((r) => r.headers["idempotency-key"]);
    expect(new Set(ticks).size).toBe(ticks.length); // no second delivery of any instant

    const view = (await serve.api("GET", "/v1/cluster")).json;
    expect(view.leader).toBe("remote-1");
    expect(view.nodes.map((n: { id: string; alive: boolean }) => [n.id, n.alive])).toEqual([["remote-1", true]]);
    expect(server.requests).toBeGreaterThan(10);
    expect(serve.logs.filter((l) => /"level":"(error|warn)"/.test(l))).toEqual([]);
  });
});
