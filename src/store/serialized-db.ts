// One writer at a time per process on a libSQL client. Used on the embedded database's own
// thread (db-worker.ts) and directly for a remote server.

import Database from "libsql";
import { createClient, type Client, type InStatement, type ResultSet, type Transaction, type TransactionMode } from "@libsql/client";

/**
 * Serialises this process's writes. The embedded driver runs each statement synchronously, so a
 * write on one connection while another connection of the same process holds the write lock
 * (an interactive transaction between two of its awaits) blocks the whole event loop until the
 * busy timeout — a deadlock, since the holder can never continue. One writer at a time per
 * process avoids it and costs nothing: synchronous statements cannot overlap anyway. Readers
 * are not held back (WAL lets them run beside the writer). Other processes wait on the busy
 * timeout as usual: their transactions progress on their own.
 */
export class WriteSerializedDb {
  private tail: Promise<unknown> = Promise.resolve();

  constructor(private readonly client: Client) {}

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn, fn);
    this.tail = run.catch(() => {});
    return run;
  }

  execute(stmt: InStatement | string, args?: never): Promise<ResultSet> {
    const sql = typeof stmt === "string" ? stmt : stmt.sql;
    if (/^\s*(SELECT|WITH)\b/i.test(sql) && !/\bRETURNING\b/i.test(sql)) return this.client.execute(stmt as InStatement);
    return this.exclusive(() => this.client.execute(stmt as InStatement));
  }

  batch(stmts: Parameters<Client["batch"]>[0], mode?: TransactionMode): Promise<ResultSet[]> {
    if (mode === "read") return this.client.batch(stmts, mode);
    return this.exclusive(() => this.client.batch(stmts, mode));
  }

  transaction(mode?: TransactionMode): Promise<Transaction> {
    if (mode === "read") return this.client.transaction(mode);
    // Held from BEGIN until the transaction is closed, however it ends.
    return new Promise<Transaction>((resolveTx, rejectTx) => {
      void this.exclusive(async () => {
        let tx: Transaction;
        try {
          tx = await this.client.transaction(mode);
        } catch (err) {
          rejectTx(err);
          return;
        }
        await new Promise<void>((released) => {
          const close = tx.close.bind(tx);
          tx.close = () => {
            close();
            released();
          };
          resolveTx(tx);
        });
      });
    });
  }

  close(): void {
    this.client.close();
  }
}

const STATEMENT_CACHE_SIZE = 256;
let statementCacheInstalled = false;

/**
 * @libsql/client prepares every statement again on each call, and for a small batch that is
 * most of its cost (a firing due alone paid ~1 ms of CPU, mostly parsing SQL). The embedded
 * driver's statements are reusable (each call binds and resets), and the store's SQL is a small
 * fixed set, so prepared statements are kept per connection, least recently used dropped first.
 */
function cacheStatements(): void {
  if (statementCacheInstalled) return;
  statementCacheInstalled = true;
  const proto = (Database as unknown as { prototype: { prepare(sql: string, ...rest: unknown[]): unknown } }).prototype;
  const prepare = proto.prepare;
  const caches = new WeakMap<object, Map<string, unknown>>();
  proto.prepare = function (this: object, sql: string, ...rest: unknown[]): unknown {
    if (rest.length > 0) return prepare.call(this, sql, ...rest); // the driver's own internal use
    let cache = caches.get(this);
    if (!cache) caches.set(this, (cache = new Map()));
    let stmt = cache.get(sql);
    if (stmt === undefined) {
      stmt = prepare.call(this, sql);
      if (cache.size >= STATEMENT_CACHE_SIZE) cache.delete(cache.keys().next().value!);
    } else {
      cache.delete(sql); // re-inserted below: most recently used last
    }
    cache.set(sql, stmt);
    return stmt;
  };
}

/** An embedded database file on the calling thread, in WAL mode. */
export async function openEmbedded(url: string, busyTimeoutMs: number): Promise<WriteSerializedDb> {
  cacheStatements();
  // The busy timeout is per connection, so it must go through createClient.
  const client = createClient({ url, timeout: busyTimeoutMs });
  // WAL lets readers (API, status page) run beside the one writer without blocking it.
  await client.execute("PRAGMA journal_mode=WAL");
  await client.execute("PRAGMA synchronous=NORMAL");
  return new WriteSerializedDb(client);
}
