// Webhook targets: loopback and private networks are fine; link-local and metadata are refused,
// and a job aimed at one goes DEAD at once instead of being retried.

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { checkTarget, refusedAddress } from "../src/net/target-guard.ts";
import { startTestNode, type TestNode } from "./helpers/node.ts";

describe("refusedAddress", () => {
  test.each([
    ["169.254.169.254", true],
    ["169.254.0.1", true],
    ["100.100.100.200", true],
    ["fe80::1", true],
    ["fd00:ec2::254", true],
    ["::ffff:169.254.169.254", true],
    ["127.0.0.1", false],
    ["10.1.2.3", false],
    ["192.168.1.1", false],
    ["::1", false],
    ["fd00::1", false],
  ])("%s refused: %p", (ip, refused) => {
    expect(refusedAddress(ip) !== null).toBe(refused);
  });

  test("host names are judged by what they resolve to", async () => {
    await expect(checkTarget("http://localhost:9/x")).resolves.toBeUndefined();
    await expect(checkTarget("http://[fe80::1]:80/")).rejects.toThrow("link-local");
    await expect(checkTarget("http://metadata.google.internal/computeMetadata/v1/")).rejects.toThrow("metadata");
  });
});

describe("a job aimed at the metadata address", () => {
  let node: TestNode;
  beforeAll(async () => {
    node = await startTestNode();
  });
  afterAll(async () => {
    await node.stop(0);
  });

  test("goes DEAD at once with the reason, no retries", async () => {
    await node.api("PUT", "/v1/jobs/imds", { schedule: { cron: "0 0 1 1 *" }, target: { url: "http://169.254.169.254/latest/meta-data/" } });
    const fired = (await node.api("POST", "/v1/jobs/imds/trigger")).json;
    let f: any;
    for (let i = 0; i < 50; i++) {
      f = (await node.api("GET", `/v1/firings/${fired.id}`)).json;
      if (f.state === "DEAD") break;
      await Bun.sleep(50);
    }
    expect(f.state).toBe("DEAD");
    expect(f.attempts).toBe(1);
    expect(f.last_error).toContain("target refused");
  });
});
