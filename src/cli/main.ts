// The client commands of the cronwheel binary (`jobs`, `firings`, `preview`): flag parsing with
// node:util parseArgs, dispatch to the API through client.ts, and the usage text `cronwheel help`
// prints. Exit codes: 0 success, 1 the server answered an error, 2 usage error, 3 unreachable.

import { parseArgs, type ParseArgsConfig } from "node:util";
import { usage as serveUsage } from "../config.ts";
import { CliError, Client, DEFAULT_SERVER, EXIT, type Page, type Reply, serverUrl, UsageError } from "./client.ts";
import { firingsTable, jobDetail, jobsTable, previewText } from "./format.ts";

type Options = NonNullable<ParseArgsConfig["options"]>;
type Values = Record<string, string | boolean | undefined>;

interface Ctx {
  client: Client;
  json: boolean;
  values: Values;
  args: string[];
}

interface Command {
  /** Positional arguments: required names, then "[optional]" ones. */
  args: string[];
  options: Options;
  run(ctx: Ctx): Promise<void>;
}

const GLOBAL: Options = {
  server: { type: "string" },
  token: { type: "string" },
  json: { type: "boolean" },
  help: { type: "boolean", short: "h" },
};
const PAGING: Options = { limit: { type: "string" }, cursor: { type: "string" }, all: { type: "boolean" } };
const JOB_FLAGS: Options = {
  id: { type: "string" },
  cron: { type: "string" },
  timezone: { type: "string" },
  every: { type: "string" },
  at: { type: "string" },
  url: { type: "string" },
  method: { type: "string" },
};

/** Usage lines per command group; `cronwheel help` shows them all, a usage error its group's. */
const GROUP_USAGE: Record<string, string[]> = {
  jobs: [
    "  jobs add <file.json | ->              create a job from a JSON file or stdin (POST /v1/jobs)",
    "  jobs add --url URL (--cron EXPR [--timezone ZONE] | --every DURATION | --at INSTANT)",
    "           [--id ID] [--method METHOD]  create a job from flags",
    "  jobs ls [--limit N] [--cursor C] [--all]   list jobs (--all follows next_cursor)",
    "  jobs get <id>                         show one job",
    "  jobs rm <id>                          delete a job",
    "  jobs pause <id> | jobs resume <id>    pause or resume a job",
    "  jobs trigger <id>                     fire a job now, once",
  ],
  firings: [
    "  firings ls [--job ID | --state STATE] [--limit N] [--cursor C] [--all]",
    "                                        list firings, newest first",
    "  firings cancel <id>                   cancel a firing that has not finished",
    "  firings retry <id>                    re-drive a DEAD firing",
  ],
  preview: [
    "  preview (--cron EXPR [--timezone ZONE] [--dst-gap shift|skip] [--dst-overlap first|both]",
    "           | --every DURATION) [--from INSTANT] [--count N]",
    "                                        the next firing instants, computed by the server",
  ],
};

const CLIENT_FLAGS = `Client flags (anywhere after the command):
  --server URL   the node to talk to (default ${DEFAULT_SERVER})  [CRONWHEEL_SERVER]
  --token T      API bearer token (default none)  [CRONWHEEL_TOKEN]
  --json         print the server's JSON unchanged instead of tables (ls --all: one merged page)

Exit codes:
  0  success
  1  the server answered an error (4xx/5xx); its message and issues go to stderr
  2  usage error: unknown command, bad flags, or a job file that cannot be read or parsed
  3  cannot reach the server (connection refused, DNS, TLS, or no answer within 30 s)`;

/** What `cronwheel help` prints: every command, the serve flags, the exit codes. */
export function helpText(): string {
  return [
    "usage: cronwheel <command> [flags]",
    "",
    "  serve [flags]                         run a scheduler node (flags below)",
    "  help                                  this text",
    "",
    "Client commands (talk to a running node):",
    ...Object.values(GROUP_USAGE).flat(),
    "",
    CLIENT_FLAGS,
    "",
    serveUsage().replace(/^usage: cronwheel serve \[flags\]/, "Flags of serve (each also an env var):"),
  ].join("\n");
}

function print(text: string): void {
  if (text !== "") process.stdout.write(text.endsWith("\n") ? text : `${text}\n`);
}

function positiveInt(name: string, raw: string | boolean | undefined): number | null {
  if (raw === undefined) return null;
  if (typeof raw !== "string" || !/^[1-9]\d{0,8}$/.test(raw)) throw new UsageError(`--${name} must be a positive whole number, got "${raw}"`);
  return Number(raw);
}

const str = (v: string | boolean | undefined): string | null => (typeof v === "string" ? v : null);

/** `--json` prints the reply as the server sent it; otherwise `human` renders it. */
function show<T>(ctx: Ctx, reply: Reply<T>, human: (json: T) => string): void {
  print(ctx.json ? reply.text : human(reply.json));
}

/** One page, or with --all every page (merged into one {"items", "next_cursor": null} for --json). */
async function listPages<T>(ctx: Ctx, fetchPage: (limit: number | null, cursor: string | null) => Promise<Reply<Page<T>>>, render: (items: T[]) => string, noun: string): Promise<void> {
  const limit = positiveInt("limit", ctx.values.limit);
  const first = await fetchPage(limit, str(ctx.values.cursor));
  if (ctx.json && !ctx.values.all) return print(first.text);
  const items = [...first.json.items];
  let cursor = first.json.next_cursor;
  while (ctx.values.all && cursor) {
    const page = (await fetchPage(limit, cursor)).json;
    items.push(...page.items);
    cursor = page.next_cursor;
  }
  if (ctx.json) return print(JSON.stringify({ items, next_cursor: null }));
  if (items.length === 0) console.error(`no ${noun}`);
  else print(render(items));
  if (cursor) console.error(`more ${noun}: --cursor ${cursor} for the next page, or --all`);
}

async function readJobFile(path: string): Promise<unknown> {
  let text: string;
  try {
    text = path === "-" ? await Bun.stdin.text() : await Bun.file(path).text();
  } catch (err) {
    throw new UsageError(`cannot read ${path === "-" ? "stdin" : path}: ${(err as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UsageError(`${path === "-" ? "stdin" : path} is not valid JSON: ${(err as Error).message}`);
  }
}

/** The common case of `jobs add` without a file: a schedule and a target URL. */
function jobFromFlags(v: Values): Record<string, unknown> {
  const cron = str(v.cron), every = str(v.every), at = str(v.at), url = str(v.url);
  const kinds = [cron, every, at].filter((k) => k !== null).length;
  if (kinds !== 1) throw new UsageError("give a job file, or exactly one of --cron, --every or --at with --url");
  if (url === null) throw new UsageError("--url is required to build a job from flags");
  if (v.timezone !== undefined && cron === null) throw new UsageError("--timezone goes with --cron");
  const schedule = cron !== null ? { cron, ...(v.timezone !== undefined && { timezone: v.timezone }) } : every !== null ? { every } : { at };
  return {
    ...(v.id !== undefined && { id: v.id }),
    schedule,
    target: { url, ...(v.method !== undefined && { method: v.method }) },
  };
}

const byId = <T>(run: (client: Client, id: string) => Promise<Reply<T>>, human: (json: T, id: string) => string): Command => ({
  args: ["<id>"],
  options: {},
  run: async (ctx) => {
    const id = ctx.args[0]!;
    show(ctx, await run(ctx.client, id), (json) => human(json, id));
  },
});

const CANCEL_TEXT: Record<string, string> = {
  "cancel-completed": "it had not started and is now CANCELLED",
  "cancel-accepted": "it is running: its request is being aborted and it ends CANCELLED, with no retry",
};

const GROUPS: Record<string, Record<string, Command>> = {
  jobs: {
    add: {
      args: ["[file]"],
      options: JOB_FLAGS,
      async run(ctx) {
        const file = ctx.args[0];
        if (file !== undefined && Object.keys(JOB_FLAGS).some((f) => ctx.values[f] !== undefined)) {
          throw new UsageError("give either a job file or job flags (--cron, --url, ...), not both");
        }
        const job = file !== undefined ? await readJobFile(file) : jobFromFlags(ctx.values);
        show(ctx, await ctx.client.createJob(job), (j) => jobsTable([j]));
      },
    },
    ls: {
      args: [],
      options: PAGING,
      run: (ctx) => listPages(ctx, (limit, cursor) => ctx.client.listJobs(limit, cursor), jobsTable, "jobs"),
    },
    get: byId((c, id) => c.getJob(id), jobDetail),
    rm: byId((c, id) => c.deleteJob(id), (_, id) => `deleted job ${id}`),
    pause: byId((c, id) => c.pauseJob(id), (j) => jobsTable([j])),
    resume: byId((c, id) => c.resumeJob(id), (j) => jobsTable([j])),
    trigger: byId((c, id) => c.triggerJob(id), (f) => firingsTable([f])),
  },
  firings: {
    ls: {
      args: [],
      options: { ...PAGING, job: { type: "string" }, state: { type: "string" } },
      run(ctx) {
        const job = str(ctx.values.job);
        const state = str(ctx.values.state)?.toUpperCase() ?? null;
        if (job !== null && state !== null) {
          throw new UsageError("--state filters firings across jobs; it cannot be combined with --job");
        }
        return listPages(ctx, (limit, cursor) => ctx.client.listFirings({ job, state, limit, cursor }), firingsTable, "firings");
      },
    },
    cancel: byId((c, id) => c.cancelFiring(id), (r, id) => `${r.outcome}: firing ${id} ${CANCEL_TEXT[r.outcome] ?? ""}`.trimEnd()),
    retry: byId((c, id) => c.retryFiring(id), (f) => firingsTable([f])),
  },
  preview: {
    "": {
      args: [],
      options: {
        cron: { type: "string" },
        timezone: { type: "string" },
        every: { type: "string" },
        "dst-gap": { type: "string" },
        "dst-overlap": { type: "string" },
        from: { type: "string" },
        count: { type: "string" },
      },
      async run(ctx) {
        const v = ctx.values;
        if ((v.cron === undefined) === (v.every === undefined)) throw new UsageError("give exactly one of --cron or --every");
        const reply = await ctx.client.preview({
          cron: str(v.cron),
          timezone: str(v.timezone),
          every: str(v.every),
          dst_gap: str(v["dst-gap"]),
          dst_overlap: str(v["dst-overlap"]),
          from: str(v.from),
          count: positiveInt("count", v.count),
        });
        show(ctx, reply, (r) => previewText(r.times, str(v.timezone)));
      },
    },
  },
};

export const CLI_COMMANDS = Object.keys(GROUPS);

/** `cronwheel <group> --help` shows the flags and exit codes too; a usage error only the commands. */
function groupUsage(group: string, full = true): string {
  const tail = full ? CLIENT_FLAGS : "Flags and exit codes: cronwheel help";
  return [`usage: cronwheel ${group} ...`, ...(GROUP_USAGE[group] ?? []), "", tail].join("\n");
}

/** Runs `cronwheel <group> [sub] ...argv`; resolves to the exit code. */
export async function runCli(group: string, argv: string[], env: Record<string, string | undefined> = process.env): Promise<number> {
  const commands = GROUPS[group];
  if (!commands) {
    console.error(`cronwheel: unknown command "${group}"\n\n${helpText()}`);
    return EXIT.usage;
  }
  const sub = "" in commands ? "" : argv[0];
  const rest = sub === "" ? argv : argv.slice(1);
  if (sub === "help" || sub === "--help" || sub === "-h") {
    print(groupUsage(group));
    return EXIT.ok;
  }
  try {
    const command = sub === undefined ? undefined : commands[sub];
    if (!command) {
      const missing = sub === undefined || sub.startsWith("-");
      throw new UsageError(missing ? `"${group}" needs a subcommand: ${Object.keys(commands).join(", ")}` : `unknown command "${group} ${sub}"`);
    }
    let parsed;
    try {
      parsed = parseArgs({ args: rest, options: { ...GLOBAL, ...command.options }, strict: true, allowPositionals: true });
    } catch (err) {
      throw new UsageError((err as Error).message);
    }
    const { positionals } = parsed;
    const values = parsed.values as Values; // no option is `multiple`
    if (values.help) {
      print(groupUsage(group));
      return EXIT.ok;
    }
    const required = command.args.filter((a) => !a.startsWith("[")).length;
    if (positionals.length < required || positionals.length > command.args.length) {
      const expected = command.args.length === 0 ? "no arguments" : command.args.join(" ");
      throw new UsageError(`"${[group, sub].filter(Boolean).join(" ")}" takes ${expected}, got ${positionals.length === 0 ? "none" : positionals.map((p) => `"${p}"`).join(" ")}`);
    }
    const server = serverUrl(str(values.server) ?? (env.CRONWHEEL_SERVER || DEFAULT_SERVER));
    const token = str(values.token) ?? (env.CRONWHEEL_TOKEN || null);
    await command.run({ client: new Client(server, token), json: values.json === true, values, args: positionals });
    return EXIT.ok;
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`cronwheel: ${err.message}\n\n${groupUsage(group, false)}`);
      return err.exitCode;
    }
    if (err instanceof CliError) {
      console.error([`cronwheel: ${err.message}`, ...err.details].join("\n"));
      return err.exitCode;
    }
    console.error(`cronwheel: unexpected failure: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    return EXIT.serverError;
  }
}
