// The compiled executable (scripts/build.ts -> dist/cronwheel) runs on its own: copied alone into an
// empty temp dir outside the checkout (no node_modules anywhere above it, no NODE_PATH), it opens a
// file: database with the embedded libSQL addon, serves the API and exits 0 on SIGTERM.

import { afterAll, beforeAll, expect, test } from "bun:test";
import type { Subprocess } from "bun";
import { copyFileSync, existsSync, mkdtempSync, readdirSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, sep } from "node:path";

const ROOT = realpathSync(join(import.meta.dir, ".."));
const BINARY = join(ROOT, "dist", "cronwheel");
const BUILD_TIMEOUT_MS = 180_000;

let dir = "";
let proc: Subprocess<"ignore", "ignore", "pipe"> | null = null;
let stderrText = "";

/** Reads the child's stderr into stderrText as it arrives; resolves when the stream ends. */
async function pump(stream: ReadableStream<Uint8Array>, onText: () => void): Promise<void> {
  const decoder = new TextDecoder();
  for await (const chunk of stream) {
    stderrText += decoder.decode(chunk, { stream: true });
    onText();
  }
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: Timer | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no result after ${ms} ms; stderr so far:\n${stderrText}`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}

beforeAll(async () => {
  const build = Bun.spawn([process.execPath, "scripts/build.ts"], { cwd: ROOT, stdout: "pipe", stderr: "pipe" });
  const [code, out, err] = await Promise.all([build.exited, new Response(build.stdout).text(), new Response(build.stderr).text()]);
  if (code !== 0) throw new Error(`build failed with exit code ${code}:\n${out}\n${err}`);
  expect(existsSync(BINARY)).toBe(true);

  dir = realpathSync(mkdtempSync(join(tmpdir(), "cronwheel-bin-")));
  copyFileSync(BINARY, join(dir, "cronwheel"));
}, BUILD_TIMEOUT_MS);

afterAll(() => {
  if (proc && proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("dist/cronwheel serves from an empty directory outside the checkout and stops on SIGTERM", async () => {
  // Nothing the binary could resolve modules from: not under the checkout, no node_modules in the
  // directory or any ancestor, and the directory holds only the binary.
  expect(dir.startsWith(ROOT + sep)).toBe(false);
  expect(ROOT.startsWith(dir + sep)).toBe(false);
  for (let d = dir; ; d = dirname(d)) {
    expect(existsSync(join(d, "node_modules"))).toBe(false);
    if (dirname(d) === d) break;
  }
  expect(readdirSync(dir)).toEqual(["cronwheel"]);

  // A minimal environment: no NODE_PATH, no BUN_* or CRONWHEEL_* settings leaking in from the test runner.
  const env = { PATH: "/usr/local/bin:/usr/bin:/bin", HOME: dir, TMPDIR: tmpdir() };
  proc = Bun.spawn([join(dir, "cronwheel"), "serve", "--db", `file:${dir}/x.db`, "--port", "0"], {
    cwd: dir,
    env,
    stdin: "ignore",
    stdout: "ignore",
    stderr: "pipe",
  });

  // --port 0: the node logs the port it got as a JSON line {"msg":"serving","url":"http://HOST:PORT",...}.
  let onServing: (url: string) => void = () => {};
  const serving = new Promise<string>((resolve) => (onServing = resolve));
  const scan = () => {
    for (const line of stderrText.split("\n")) {
      if (!line.startsWith("{")) continue;
      try {
        const rec = JSON.parse(line) as { msg?: string; url?: string };
        if (rec.msg === "serving" && rec.url) return onServing(rec.url);
      } catch {} // a line still being written
    }
  };
  const drained = pump(proc.stderr, scan);
  const exitedEarly = proc.exited.then((code) => {
    throw new Error(`cronwheel exited with code ${code} before serving:\n${stderrText}`);
  });
  const url = await withTimeout(Promise.race([serving, exitedEarly]), 15_000, "waiting for the serving log line");
  exitedEarly.catch(() => {}); // it exits later on purpose
  const port = Number(new URL(url).port);
  expect(port).toBeGreaterThan(0);
  const base = `http://127.0.0.1:${port}`;

  const health = await fetch(`${base}/healthz`);
  expect(health.status).toBe(200);
  expect(((await health.json()) as { status: string }).status).toBe("ok");

  const body = { schedule: { cron: "0 9 * * *", timezone: "Europe/Berlin" }, target: { url: "http://127.0.0.1:9/x" } };
  const created = await fetch(`${base}/v1/jobs`, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
  const createdText = await created.text();
  expect(created.status, createdText).toBe(201);
  const job = JSON.parse(createdText) as { id: string; schedule: { cron: string; timezone: string }; next_fire_at: string | null };
  expect(typeof job.id).toBe("string");
  expect(job.schedule).toMatchObject(body.schedule);
  expect(job.next_fire_at).not.toBeNull();

  const fetched = await fetch(`${base}/v1/jobs/${job.id}`);
  expect(fetched.status).toBe(200);
  const again = (await fetched.json()) as typeof job & { target: { url: string } };
  expect(again.id).toBe(job.id);
  expect(again.schedule).toMatchObject(body.schedule);
  expect(again.target.url).toBe(body.target.url);

  proc.kill("SIGTERM");
  const code = await withTimeout(proc.exited, 5_000, "waiting for exit after SIGTERM");
  await drained;
  expect(code, stderrText).toBe(0);
  expect(stderrText).toContain('"msg":"stopped"');

  // It wrote nothing but its database next to itself.
  for (const name of readdirSync(dir)) expect(name).toMatch(/^(cronwheel|x\.db(-wal|-shm|-journal)?)$/);
}, 60_000);
