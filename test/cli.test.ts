// The client commands of the binary (`jobs`, `firings`, `preview`), run as real child processes
// against a real node: what they print on stdout and stderr, and the exit codes scripts rely on
// (0 success, 1 the server answered an error, 2 usage error, 3 server unreachable).

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { tempDbUrl } from "./helpers/node.ts";
import { eventually, startServe, type ServeProcess } from "./helpers/process.ts";
import { Receiver } from "./helpers/receiver.ts";

const ROOT = join(import.meta.dir, "..");
const BINARY = join(ROOT, "dist", "cronwheel");
const receiver = new Receiver();
let node: ServeProcess | null = null;
let tokenNode: ServeProcess | null = null;
let server = "";

/** The environment without any CRONWHEEL_* setting of the test runner's shell. */
function cleanEnv(extra: Record<string, string> = {}): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith("CRONWHEEL_")) env[k] = v;
  return { ...env, ...extra };
}

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function run(cmd: string[], opts: { stdin?: string; env?: Record<string, string> } = {}): Promise<Run> {
  const proc = Bun.spawn(cmd, {
    cwd: ROOT,
    env: cleanEnv(opts.env),
    stdin: opts.stdin === undefined ? "ignore" : new TextEncoder().encode(opts.stdin),
    stdout: "pipe",
    stderr: "pipe",
  });
  const [code, stdout, stderr] = await Promise.all([proc.exited, new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
  return { code, stdout, stderr };
}

/** `cronwheel <args> --server <url>` from the checkout. */
const cli = (args: string[], opts: { stdin?: string; env?: Record<string, string>; server?: string } = {}) =>
  run([process.execPath, join(ROOT, "src/main.ts"), ...args, "--server", opts.server ?? server], opts);

/** The data rows of a table (header dropped), each split on runs of 2+ spaces. */
const rows = (stdout: string) => stdout.trimEnd().split("\n").slice(1).map((l) => l.split(/ {2,}/));

beforeAll(async () => {
  await receiver.start();
  node = await startServe(tempDbUrl());
  server = node.url;
});

afterAll(async () => {
  if (node) await node.terminate();
  if (tokenNode) await tokenNode.terminate();
  receiver.stop();
});

describe("jobs", () => {
  test("add from flags prints the job as a table; ls shows it; --json parses", async () => {
    const add = await cli(["jobs", "add", "--id", "nightly", "--cron", "30 2 * * *", "--timezone", "Europe/Berlin", "--url", `${receiver.url}/hook`]);
    expect(add.code, add.stderr).toBe(0);
    expect(add.stdout.split("\n")[0]).toMatch(/^ID\s+SCHEDULE\s+NEXT FIRE \(UTC\)\s+LAST FIRED\s+PAUSED$/);
    expect(rows(add.stdout)[0]).toEqual(["nightly", "cron 30 2 * * * Europe/Berlin", expect.stringMatching(/^\d{4}-\d\d-\d\d \d\d:\d\d:00$/), "-", "no"]);

    const ls = await cli(["jobs", "ls"]);
    expect(ls.code, ls.stderr).toBe(0);
    const header = ls.stdout.split("\n")[0]!;
    const line = ls.stdout.split("\n").find((l) => l.startsWith("nightly"))!;
    // Aligned: every column starts at the same offset in the header and in the row.
    expect(line.indexOf("cron 30 2")).toBe(header.indexOf("SCHEDULE"));

    const json = await cli(["jobs", "ls", "--json"]);
    expect(json.code).toBe(0);
    const page = JSON.parse(json.stdout);
    expect(page.next_cursor).toBeNull();
    expect(page.items.find((j: { id: string }) => j.id === "nightly").schedule).toEqual({ cron: "30 2 * * *", timezone: "Europe/Berlin" });
  });

  test("add from a JSON file and from stdin; the server picks the id", async () => {
    const dir = mkdtempSync(join(tmpdir(), "cronwheel-cli-"));
    const file = join(dir, "job.json");
    writeFileSync(file, JSON.stringify({ id: "from-file", schedule: { every: "1h" }, target: { url: `${receiver.url}/f`, method: "PUT" } }));
    const fromFile = await cli(["jobs", "add", file, "--json"]);
    expect(fromFile.code, fromFile.stderr).toBe(0);
    expect(JSON.parse(fromFile.stdout)).toMatchObject({ id: "from-file", schedule: { every: "1h" }, target: { method: "PUT" } });

    const fromStdin = await cli(["jobs", "add", "-", "--json"], { stdin: JSON.stringify({ schedule: { every: "2h" }, target: { url: `${receiver.url}/s` } }) });
    expect(fromStdin.code, fromStdin.stderr).toBe(0);
    expect(JSON.parse(fromStdin.stdout).id).toMatch(/^j_/);

    const bad = await cli(["jobs", "add", join(dir, "missing.json")]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("cannot read");
  });

  test("get, pause, resume, trigger, firings ls", async () => {
    const get = await cli(["jobs", "get", "nightly"]);
    expect(get.code, get.stderr).toBe(0);
    expect(get.stdout).toMatch(/^id:\s+nightly$/m);
    expect(get.stdout).toMatch(/^target:\s+POST http:\/\/127\.0\.0\.1:\d+\/hook$/m);
    expect(JSON.parse((await cli(["jobs", "get", "nightly", "--json"])).stdout).backlog).toBe(0);

    const pause = await cli(["jobs", "pause", "nightly"]);
    expect(pause.code, pause.stderr).toBe(0);
    expect(rows(pause.stdout)[0]).toEqual(["nightly", "cron 30 2 * * * Europe/Berlin", "-", "-", "yes"]);
    const resume = await cli(["jobs", "resume", "nightly", "--json"]);
    expect(resume.code).toBe(0);
    expect(JSON.parse(resume.stdout)).toMatchObject({ id: "nightly", paused: false });

    const trigger = await cli(["jobs", "trigger", "nightly", "--json"]);
    expect(trigger.code, trigger.stderr).toBe(0);
    const firing = JSON.parse(trigger.stdout);
    expect(firing).toMatchObject({ job_id: "nightly", manual: true });
    await receiver.waitFor(() => receiver.forJob("nightly").length >= 1);

    // The receiver answered 200: the firing ends DONE, shown in the table.
    const done = await eventually(async () => {
      const r = await cli(["firings", "ls", "--job", "nightly"]);
      return r.stdout.includes("DONE") ? r : null;
    }, 15_000, "the triggered firing to be DONE");
    expect(done.code).toBe(0);
    expect(done.stdout.split("\n")[0]).toMatch(/^ID\s+JOB\s+SCHEDULED AT\s+STATE\s+ATTEMPTS\s+LAST ERROR$/);
    expect(rows(done.stdout)[0]).toEqual([firing.id, "nightly", expect.any(String), "DONE (manual)", "1", "-"]);

    const byState = JSON.parse((await cli(["firings", "ls", "--state", "done", "--json"])).stdout);
    expect(byState.items.map((f: { id: string }) => f.id)).toContain(firing.id);

    // Cancelling a finished firing: exit 1 with the server's 409 message on stderr.
    const cancel = await cli(["firings", "cancel", firing.id]);
    expect(cancel.code).toBe(1);
    expect(cancel.stdout).toBe("");
    expect(cancel.stderr).toContain(`firing "${firing.id}" has already finished`);
    expect(cancel.stderr).toContain("409");

    const retry = await cli(["firings", "retry", firing.id]);
    expect(retry.code).toBe(1);
    expect(retry.stderr).toContain("only DEAD firings can be retried");
  });

  test("cancel of a running firing: exit 0, cancel-accepted, and it ends CANCELLED", async () => {
    expect((await cli(["jobs", "add", "--id", "slow", "--every", "1h", "--url", `${receiver.url}/slow`])).code).toBe(0);
    receiver.script("slow", [{ status: 200, delayMs: 10_000 }]);
    const firing = JSON.parse((await cli(["jobs", "trigger", "slow", "--json"])).stdout);
    await receiver.waitFor(() => receiver.forJob("slow").length >= 1);
    const cancel = await cli(["firings", "cancel", firing.id]);
    expect(cancel.code, cancel.stderr).toBe(0);
    expect(cancel.stdout).toStartWith(`cancel-accepted: firing ${firing.id}`);
    await eventually(async () => (await cli(["firings", "ls", "--state", "CANCELLED"])).stdout.includes(firing.id), 15_000, "CANCELLED");
    expect((await cli(["jobs", "rm", "slow"])).code).toBe(0);
  });

  test("ls --limit 1 pages; --all follows next_cursor", async () => {
    const one = await cli(["jobs", "ls", "--limit", "1"]);
    expect(one.code).toBe(0);
    expect(rows(one.stdout)).toHaveLength(1);
    expect(one.stderr).toContain("--cursor");
    const all = JSON.parse((await cli(["jobs", "ls", "--limit", "1", "--all", "--json"])).stdout);
    expect(all.next_cursor).toBeNull();
    expect(all.items.map((j: { id: string }) => j.id)).toEqual(expect.arrayContaining(["nightly", "from-file"]));
    expect(all.items.length).toBe(3);
    expect(rows((await cli(["jobs", "ls", "--limit", "1", "--all"])).stdout)).toHaveLength(3);
  });

  test("server errors exit 1 with the message and issues; rm then get is a 404", async () => {
    const invalid = await cli(["jobs", "add", "--cron", "61 * * * *", "--url", `${receiver.url}/x`]);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toContain("the request is not valid");
    expect(invalid.stderr).toMatch(/- schedule: .*61/);

    const dup = await cli(["jobs", "add", "--id", "nightly", "--every", "1h", "--url", `${receiver.url}/x`]);
    expect(dup.code).toBe(1);
    expect(dup.stderr).toContain('job "nightly" already exists');

    const rm = await cli(["jobs", "rm", "from-file"]);
    expect(rm.code, rm.stderr).toBe(0);
    expect(rm.stdout.trim()).toBe("deleted job from-file");
    const gone = await cli(["jobs", "get", "from-file"]);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('job "from-file" not found');
  });
});

describe("exit codes", () => {
  test("usage errors exit 2 and print usage", async () => {
    for (const args of [["jobs", "frobnicate"], ["jobs"], ["jobs", "ls", "--bogus"], ["jobs", "get"], ["jobs", "ls", "--limit", "x"], ["jobs", "add", "--cron", "* * * * *"], ["preview"]]) {
      const r = await cli(args);
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stderr, args.join(" ")).toContain("usage: cronwheel");
    }
    const unknown = await run([process.execPath, join(ROOT, "src/main.ts"), "frobnicate"]);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('unknown command "frobnicate"');
    const badServer = await cli(["jobs", "ls"], { server: "not a url" });
    expect(badServer.code).toBe(2);
  });

  test("a server that is not listening exits 3", async () => {
    const probe = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
    const port = probe.port;
    probe.stop(true);
    const r = await cli(["jobs", "ls"], { server: `http://127.0.0.1:${port}` });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`cannot reach the server at http://127.0.0.1:${port}`);
  });

  test("help lists serve and the client commands, and the exit codes", async () => {
    for (const args of [["help"], []]) {
      const r = await run([process.execPath, join(ROOT, "src/main.ts"), ...args]);
      expect(r.code).toBe(0);
      for (const s of ["serve", "jobs add", "jobs ls", "firings cancel", "preview", "--db", "Exit codes", "3  cannot reach the server"]) expect(r.stdout).toContain(s);
    }
  });

  test("--token and CRONWHEEL_TOKEN reach a node that requires a token", async () => {
    tokenNode = await startServe(tempDbUrl(), ["--token", "s3cret"]);
    const denied = await cli(["jobs", "ls"], { server: tokenNode.url });
    expect(denied.code).toBe(1);
    expect(denied.stderr).toContain("a valid bearer token is required");
    expect((await cli(["jobs", "ls", "--token", "s3cret"], { server: tokenNode.url })).code).toBe(0);
    const viaEnv = await run([process.execPath, join(ROOT, "src/main.ts"), "jobs", "ls", "--json"], {
      env: { CRONWHEEL_SERVER: tokenNode.url, CRONWHEEL_TOKEN: "s3cret" },
    });
    expect(viaEnv.code, viaEnv.stderr).toBe(0);
    expect(JSON.parse(viaEnv.stdout)).toEqual({ items: [], next_cursor: null });
  });
});

const BERLIN_SHIFT = ["2027-03-27T01:30:00.000Z", "2027-03-28T01:00:00.000Z", "2027-03-29T00:30:00.000Z"];
const PREVIEW_ARGS = ["preview", "--cron", "30 2 * * *", "--timezone", "Europe/Berlin", "--from", "2027-03-27T00:00:00Z", "--count", "3"];

test("preview prints the Berlin DST shift, with local wall times", async () => {
  const r = await cli(PREVIEW_ARGS);
  expect(r.code, r.stderr).toBe(0);
  expect(rows(r.stdout)).toEqual([
    [BERLIN_SHIFT[0]!, "Sat 2027-03-27 02:30:00 +01:00"],
    [BERLIN_SHIFT[1]!, "Sun 2027-03-28 03:00:00 +02:00"],
    [BERLIN_SHIFT[2]!, "Mon 2027-03-29 02:30:00 +02:00"],
  ]);
  expect(JSON.parse((await cli([...PREVIEW_ARGS, "--json"])).stdout)).toEqual({ times: BERLIN_SHIFT });
});

// The compiled binary: built here (about a second) unless a build newer than the sources exists,
// so the client is always tested as shipped.
test("dist/cronwheel runs the client commands", async () => {
  const sources = readdirSync(join(ROOT, "src"), { recursive: true }).map((f) => join(ROOT, "src", String(f)));
  const fresh = existsSync(BINARY) && sources.every((f) => statSync(f).mtimeMs <= statSync(BINARY).mtimeMs);
  if (!fresh) {
    const build = Bun.spawnSync([process.execPath, join(ROOT, "scripts", "build.ts")], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
    expect(build.exitCode, build.stderr.toString()).toBe(0);
  }
  const r = await run([BINARY, ...PREVIEW_ARGS, "--server", server]);
  expect(r.code, r.stderr).toBe(0);
  expect(rows(r.stdout).map((row) => row[0])).toEqual(BERLIN_SHIFT);
  const gone = await run([BINARY, "jobs", "get", "no-such-job", "--server", server]);
  expect(gone.code).toBe(1);
  expect(gone.stderr).toContain('job "no-such-job" not found');
  const help = await run([BINARY, "help"]);
  expect(help.code).toBe(0);
  expect(help.stdout).toContain("firings ls");
});
