// Command-line flags of `serve`, each also readable from CRONWHEEL_<FLAG> (SPEC "Running it").
// Parsed and checked once at start; a bad flag stops the process with a clear message.

import { parseArgs } from "node:util";
import { newNodeId } from "./core/ids.ts";
import type { LogLevel } from "./core/log.ts";

export interface ServeConfig {
  db: string;
  host: string;
  port: number;
  nodeId: string;
  /** Null: the listening address, known once the port is bound. */
  advertise: string | null;
  token: string | null;
  signingSecret: string | null;
  leaseMs: number;
  misfireThresholdMs: number;
  maxInFlight: number;
  planAheadMs: number;
  /** What the hash ring spreads: whole jobs (a job's firings on one node) or single firings. */
  spread: "job" | "firing";
  logLevel: LogLevel;
}

const FLAGS = {
  db: { type: "string", default: "file:data/cronwheel.db" },
  host: { type: "string", default: "127.0.0.1" },
  port: { type: "string", default: "8080" },
  "node-id": { type: "string" },
  advertise: { type: "string" },
  token: { type: "string" },
  "signing-secret": { type: "string" },
  "lease-ms": { type: "string", default: "5000" },
  "misfire-threshold-ms": { type: "string", default: "60000" },
  "max-in-flight": { type: "string", default: "512" },
  "plan-ahead-ms": { type: "string", default: "10000" },
  spread: { type: "string", default: "job" },
  "log-level": { type: "string", default: "info" },
} as const;

export const FLAG_HELP: Record<keyof typeof FLAGS, string> = {
  db: "libSQL URL: file:PATH (embedded) or libsql://, http(s):// (a libSQL server)",
  host: "address to listen on",
  port: "port to listen on",
  "node-id": "this node's id in the cluster (default: random per process)",
  advertise: "URL peers use to reach this node (default: http://HOST:PORT)",
  token: "bearer token required on /v1 (default: none)",
  "signing-secret": "secret for the Cronwheel-Signature header (default: unsigned)",
  "lease-ms": "leader lease TTL in ms",
  "misfire-threshold-ms": "how late a firing may be found before its misfire policy applies",
  "max-in-flight": "webhook requests in flight from this node at most",
  "plan-ahead-ms": "how far ahead the leader enqueues firings and nodes claim them",
  spread: "job: a job's firings go to one node; firing: each firing to a node of its own",
  "log-level": "debug, info, warn or error",
};

export class ConfigError extends Error {}

function envName(flag: string): string {
  return `CRONWHEEL_${flag.toUpperCase().replaceAll("-", "_")}`;
}

function int(name: string, raw: string, min: number, max: number): number {
  if (!/^\d+$/.test(raw)) throw new ConfigError(`--${name} must be a whole number, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(`--${name} must be between ${min} and ${max}, got ${n}`);
  return n;
}

export function parseServeConfig(argv: string[], env: Record<string, string | undefined>): ServeConfig {
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({ args: argv, options: FLAGS, strict: true, allowPositionals: false }));
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  // A flag given on the command line wins over its environment variable, which wins over the default.
  const get = (flag: keyof typeof FLAGS): string | undefined => {
    const fromArgs = argv.some((a) => a === `--${flag}` || a.startsWith(`--${flag}=`));
    if (fromArgs) return values[flag] as string;
    return env[envName(flag)] ?? (values[flag] as string | undefined);
  };
  const host = get("host")!;
  const port = int("port", get("port")!, 0, 65_535);
  const logLevel = get("log-level")!;
  const spread = get("spread")!;
  if (spread !== "job" && spread !== "firing") throw new ConfigError(`--spread must be job or firing, got "${spread}"`);
  if (!["debug", "info", "warn", "error"].includes(logLevel)) throw new ConfigError(`--log-level must be debug, info, warn or error`);
  return {
    db: get("db")!,
    host,
    port,
    nodeId: get("node-id") ?? newNodeId(),
    advertise: get("advertise") ?? null,
    token: get("token") || null,
    signingSecret: get("signing-secret") || null,
    leaseMs: int("lease-ms", get("lease-ms")!, 300, 60_000),
    misfireThresholdMs: int("misfire-threshold-ms", get("misfire-threshold-ms")!, 0, 86_400_000),
    maxInFlight: int("max-in-flight", get("max-in-flight")!, 1, 100_000),
    planAheadMs: int("plan-ahead-ms", get("plan-ahead-ms")!, 100, 600_000),
    spread,
    logLevel: logLevel as LogLevel,
  };
}

export function usage(): string {
  const lines = Object.entries(FLAG_HELP).map(([flag, help]) => {
    const def = (FLAGS as Record<string, { default?: string }>)[flag]?.default;
    return `  --${flag.padEnd(22)} ${help}${def ? ` (default ${def})` : ""}  [${envName(flag)}]`;
  });
  return ["usage: cronwheel serve [flags]", "", ...lines].join("\n");
}
