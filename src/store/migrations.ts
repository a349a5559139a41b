// Numbered schema migrations, embedded in the binary and applied in order at start.
// A migration is never edited once released; changes go in a new entry.

export interface Migration {
  version: number;
  name: string;
  statements: string[];
}

export const MIGRATIONS: Migration[] = [
  {
    version: 1,
    name: "jobs, firings, leases",
    statements: [
      // spec is the whole job definition as JSON (defaults applied); the columns beside it
      // are the scheduler's bookkeeping, which the planner reads without parsing JSON.
      `CREATE TABLE jobs (
        id TEXT PRIMARY KEY,
        spec TEXT NOT NULL,
        paused INTEGER NOT NULL DEFAULT 0,
        next_fire_at INTEGER,
        last_fired_at INTEGER,
        anchor_at INTEGER NOT NULL,
        version INTEGER NOT NULL DEFAULT 1,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL
      ) STRICT`,
      // Only schedulable jobs are indexed, so finding due work touches due rows only.
      `CREATE INDEX jobs_due ON jobs (next_fire_at) WHERE next_fire_at IS NOT NULL AND paused = 0`,
      `CREATE TABLE firings (
        id TEXT PRIMARY KEY,
        job_id TEXT NOT NULL,
        scheduled_at INTEGER NOT NULL,
        state TEXT NOT NULL,
        attempts INTEGER NOT NULL DEFAULT 0,
        catchup INTEGER NOT NULL DEFAULT 0,
        manual INTEGER NOT NULL DEFAULT 0,
        epoch INTEGER NOT NULL,
        priority TEXT NOT NULL DEFAULT 'normal',
        last_error TEXT,
        next_attempt_at INTEGER NOT NULL,
        claimed_by TEXT,
        cancel_requested INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        UNIQUE (job_id, scheduled_at)
      ) STRICT`,
      // Work a dispatcher may pick up; terminal rows stay out of the index.
      `CREATE INDEX firings_ready ON firings (next_attempt_at)
        WHERE state IN ('SCHEDULED', 'RETRYING')`,
      `CREATE INDEX firings_claims_by_node ON firings (claimed_by)
        WHERE state IN ('CLAIMED', 'RUNNING')`,
      `CREATE INDEX firings_by_job ON firings (job_id, scheduled_at DESC, id DESC)`,
      `CREATE INDEX firings_by_state ON firings (state, scheduled_at DESC, id DESC)`,
      `CREATE TABLE leases (
        name TEXT PRIMARY KEY,
        holder TEXT,
        epoch INTEGER NOT NULL DEFAULT 0,
        expires_at INTEGER NOT NULL DEFAULT 0
      ) STRICT`,
      `INSERT INTO leases (name, holder, epoch, expires_at) VALUES ('leader', NULL, 0, 0)`,
      `CREATE TABLE nodes (
        id TEXT PRIMARY KEY,
        address TEXT NOT NULL,
        started_at INTEGER NOT NULL,
        last_seen_at INTEGER NOT NULL
      ) STRICT`,
    ],
  },
  {
    version: 2,
    name: "firing owner and delivering node",
    statements: [
      // The node the leader assigned the firing to (hash ring by job id); others take it only
      // when that node is not alive.
      `ALTER TABLE firings ADD COLUMN owner TEXT`,
      // The node that made the latest attempt, kept after the claim is let go.
      `ALTER TABLE firings ADD COLUMN delivered_by TEXT`,
    ],
  },
  {
    version: 3,
    name: "job concurrency slots",
    statements: [
      // The per-job concurrency cap, cluster-wide: a row per firing holding a slot. A slot counts
      // while the node that took it is alive (fresh heartbeat), so a dead node's hold lapses with
      // it; taken_at lets overlap be judged at each firing's own instant.
      `CREATE TABLE job_slots (
        job_id TEXT NOT NULL,
        firing_id TEXT NOT NULL,
        node TEXT NOT NULL,
        taken_at INTEGER NOT NULL,
        -- 1 when the holder started on time or after waiting its turn under the policy: only
        -- such holders make later firings of the job skip, coalesce or queue.
        counts INTEGER NOT NULL,
        PRIMARY KEY (job_id, firing_id)
      ) STRICT`,
      `CREATE INDEX job_slots_firing ON job_slots (firing_id)`,
      `CREATE INDEX job_slots_node ON job_slots (node)`,
      // 0: not waiting; 1: waiting for a slot, counted against coalesce/queue limits;
      // 2: waiting, not counted (catch-up and late firings, which the policy never skips).
      `ALTER TABLE firings ADD COLUMN waiting INTEGER NOT NULL DEFAULT 0`,
      `CREATE INDEX firings_waiting ON firings (job_id, scheduled_at) WHERE waiting > 0`,
    ],
  },
  {
    version: 4,
    name: "firings by time",
    statements: [
      // Recent firings across jobs, newest first (status page), without a scan.
      `CREATE INDEX firings_by_time ON firings (scheduled_at DESC)`,
    ],
  },
];
