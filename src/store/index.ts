// The libSQL implementation of core's Store port: the one place that knows SQL.

import type { Store } from "../core/ports.ts";
import { openDatabase, type OpenOptions } from "./db.ts";
import { LibsqlFiringStore } from "./firings.ts";
import { LibsqlJobStore } from "./jobs.ts";
import { LibsqlLeaseStore } from "./lease.ts";
import { LibsqlNodeStore } from "./nodes.ts";
import { LibsqlSlotStore } from "./slots.ts";

export { InvalidCursorError } from "./rows.ts";

export async function openStore(url: string, opts: OpenOptions = {}): Promise<Store> {
  const db = await openDatabase(url, opts);
  return {
    jobs: new LibsqlJobStore(db),
    slots: new LibsqlSlotStore(db),
    firings: new LibsqlFiringStore(db),
    lease: new LibsqlLeaseStore(db),
    nodes: new LibsqlNodeStore(db),
    close: () => db.close(),
  };
}
