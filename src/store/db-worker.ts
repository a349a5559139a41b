// The embedded database's own thread. libSQL's embedded driver runs every statement
// synchronously on the calling thread; here that thread is this worker, so the node's event
// loop (timers, webhook requests, the API) never stops while SQLite works, and the two run on
// separate cores. The node talks to it through WorkerDb (db.ts) with one message per call.

import type { InStatement, ResultSet, Transaction, TransactionMode } from "@libsql/client";
import { openEmbedded, type WriteSerializedDb } from "./serialized-db.ts";
import type { SqlResult, WorkerReply, WorkerRequest } from "./worker-protocol.ts";

declare const self: Worker;

let db: WriteSerializedDb | null = null;
const transactions = new Map<number, Transaction>();
let nextTx = 1;

/** Plain rows (column name -> value) that survive structured cloning. */
function plain(rs: ResultSet): SqlResult {
  const columns = rs.columns;
  const rows = new Array<Record<string, unknown>>(rs.rows.length);
  for (let i = 0; i < rs.rows.length; i++) {
    const r = rs.rows[i]!;
    const o: Record<string, unknown> = {};
    for (let c = 0; c < columns.length; c++) o[columns[c]!] = r[c];
    rows[i] = o;
  }
  return { rows, rowsAffected: rs.rowsAffected };
}

function open(): WriteSerializedDb {
  if (!db) throw new Error("database not open");
  return db;
}

function tx(id: number): Transaction {
  const t = transactions.get(id);
  if (!t) throw new Error("transaction is closed");
  return t;
}

async function handle(m: WorkerRequest): Promise<unknown> {
  switch (m.op) {
    case "open":
      db = await openEmbedded(m.url, m.busyTimeoutMs);
      return null;
    case "execute":
      return plain(await open().execute(m.stmt as InStatement));
    case "batch":
      return (await open().batch(m.stmts as InStatement[], m.mode as TransactionMode | undefined)).map(plain);
    case "begin": {
      const id = nextTx++;
      transactions.set(id, await open().transaction(m.mode as TransactionMode | undefined));
      return id;
    }
    case "tx.execute":
      return plain(await tx(m.tx).execute(m.stmt as InStatement));
    case "tx.batch":
      return (await tx(m.tx).batch(m.stmts as InStatement[])).map(plain);
    case "tx.commit":
      return void (await tx(m.tx).commit());
    case "tx.rollback":
      return void (await tx(m.tx).rollback());
    case "tx.close": {
      transactions.get(m.tx)?.close();
      transactions.delete(m.tx);
      return null;
    }
    case "close": {
      for (const t of transactions.values()) t.close();
      transactions.clear();
      db?.close();
      db = null;
      return null;
    }
  }
}

self.onmessage = (event: MessageEvent<WorkerRequest>) => {
  const m = event.data;
  handle(m).then(
    (value) => self.postMessage({ id: m.id, ok: true, value } satisfies WorkerReply),
    (err: unknown) => {
      const e = err instanceof Error ? err : new Error(String(err));
      const code = (e as Error & { code?: unknown }).code;
      self.postMessage({ id: m.id, ok: false, error: { message: e.message, name: e.name, code: typeof code === "string" ? code : undefined } } satisfies WorkerReply);
    },
  );
};
