// Messages between WorkerDb (the node's thread) and db-worker.ts (the embedded database's thread).

/** A statement's result as the store reads it: rows by column name, and how many rows changed. */
export interface SqlResult {
  rows: Record<string, unknown>[];
  rowsAffected: number;
}

export type SqlArg = string | number | bigint | boolean | null | Uint8Array;
export type SqlStatement = string | { sql: string; args?: SqlArg[] };
export type SqlMode = "write" | "read" | "deferred";

export type WorkerRequest = { id: number } & (
  | { op: "open"; url: string; busyTimeoutMs: number }
  | { op: "execute"; stmt: SqlStatement }
  | { op: "batch"; stmts: SqlStatement[]; mode?: SqlMode }
  | { op: "begin"; mode?: SqlMode }
  | { op: "tx.execute"; tx: number; stmt: SqlStatement }
  | { op: "tx.batch"; tx: number; stmts: SqlStatement[] }
  | { op: "tx.commit" | "tx.rollback" | "tx.close"; tx: number }
  | { op: "close" }
);

export type WorkerReply =
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: { message: string; name: string; code: string | undefined } };
