// The status page in a real browser (Debian chromium driven by playwright-core) against a running
// node with real jobs: sign in with the token, see the leader, a firing that just happened and a
// failing one; the token never appears in the page or its cookie. Keeps a screenshot in
// test-artifacts/status-page.png.

import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, mkdirSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";
import { startTestNode, type TestNode } from "./helpers/node.ts";
import { Receiver } from "./helpers/receiver.ts";

const CHROMIUM = "/usr/bin/chromium";
const TOKEN = "s3cret-status-token";
// CI installs chromium; a developer machine without it skips rather than fails.
const skip = !existsSync(CHROMIUM) && process.env.CI !== "true";

let node: TestNode;
let browser: Browser;
const receiver = new Receiver();
const auth = { authorization: `Bearer ${TOKEN}` };

beforeAll(async () => {
  if (skip) return;
  await receiver.start();
  node = await startTestNode(["--token", TOKEN]);
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--no-first-run"],
  });
});
afterAll(async () => {
  if (skip) return;
  await browser?.close();
  await node?.stop(0);
  receiver.stop();
});

test.skipIf(skip)("renders the leader, a firing that just happened and a failing one, behind the token", async () => {
  receiver.script("nightly-bad", [{ status: 400 }]);
  await node.api("PUT", "/v1/jobs/heartbeat", { schedule: { cron: "*/2 * * * * *", timezone: "Europe/Berlin" }, target: { url: `${receiver.url}/ok` } }, auth);
  await node.api("PUT", "/v1/jobs/nightly-report", { schedule: { cron: "0 9 * * *", timezone: "America/New_York" }, target: { url: `${receiver.url}/ok` } }, auth);
  await node.api("PUT", "/v1/jobs/hourly-sync", { schedule: { cron: "0 * * * *", timezone: "Asia/Tokyo" }, target: { url: `${receiver.url}/ok` } }, auth);
  await node.api("PUT", "/v1/jobs/nightly-bad", { schedule: { at: new Date(Date.now() + 300).toISOString() }, target: { url: `${receiver.url}/bad` } }, auth);
  await receiver.waitFor((r) => r.some((x) => x.headers["cronwheel-job-id"] === "heartbeat") && r.some((x) => x.headers["cronwheel-job-id"] === "nightly-bad"));
  await Bun.sleep(300);
  const justHappened = receiver.forJob("heartbeat").at(-1)!.headers["cronwheel-firing-id"]!;

  const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
  const started = Date.now();
  const first = await page.goto(node.url + "/");
  expect(first!.status()).toBe(401);
  await page.fill("input[name=token]", TOKEN);
  await Promise.all([page.waitForURL(node.url + "/"), page.click("button[type=submit]")]);
  await page.waitForSelector("#leader");
  const renderMs = Date.now() - started;

  expect((await page.textContent("#leader"))!.trim()).toBe(node.nodeId);
  const recent = (await page.textContent("#recent"))!;
  expect(recent).toContain(justHappened.slice(0, 14));
  expect(recent).toContain("heartbeat");
  const dead = (await page.textContent("#dead"))!;
  expect(dead).toContain("nightly-bad");
  expect(dead).toContain("HTTP 400");
  // Links to a firing's JSON work with the page's cookie.
  const link = await page.getAttribute("#dead a", "href");
  const json = await page.request.get(node.url + link!);
  expect(json.status()).toBe(200);
  expect((await json.json()).state).toBe("DEAD");
  // The token is in neither the page nor its cookie.
  expect(await page.content()).not.toContain(TOKEN);
  const cookies = await page.context().cookies();
  expect(cookies.map((c) => c.value).join(" ")).not.toContain(TOKEN);
  expect(cookies.find((c) => c.name === "cronwheel_session")?.httpOnly).toBe(true);

  mkdirSync("test-artifacts", { recursive: true });
  await page.screenshot({ path: "test-artifacts/status-page.png", fullPage: true });
  console.log(`status page: ${(await page.content()).length} bytes, rendered in ${renderMs} ms (sign-in included)`);
  await page.close();
}, 60_000);
