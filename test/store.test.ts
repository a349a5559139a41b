// The Store contract (helpers/store-contract.ts) on an embedded libSQL `file:` database: fencing by
// epoch, the lease and claims on the database clock, update CAS, insertMany all or nothing.

import { describe } from "bun:test";
import { openStore } from "../src/store/index.ts";
import { storeContract } from "./helpers/store-contract.ts";
import { tempDbUrl } from "./helpers/node.ts";

describe("store contract: embedded file", () => storeContract(() => openStore(tempDbUrl())));
