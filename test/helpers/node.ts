// Starts a real cronwheel node in-process on a fresh database file, for integration tests.

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseServeConfig } from "../../src/config.ts";
import { silentLogger } from "../../src/core/log.ts";
import { startNode, type NodeHandle, type NodeOverrides } from "../../src/node.ts";

export function tempDbUrl(): string {
  return `file:${join(mkdtempSync(join(tmpdir(), "cronwheel-test-")), "cw.db")}`;
}

export interface TestNode extends NodeHandle {
  db: string;
  api(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<{ status: number; json: any; text: string }>;
}

export async function startTestNode(flags: string[] = [], o: NodeOverrides = {}, db = tempDbUrl()): Promise<TestNode> {
  const cfg = parseServeConfig(["--db", db, "--port", "0", "--lease-ms", "1000", ...flags], {});
  const node = await startNode(cfg, { log: silentLogger, ...o });
  // Wait until this single node leads, so tests start from a working scheduler.
  for (let i = 0; i < 100 && !node.leader.current(); i++) await Bun.sleep(20);
  return {
    ...node,
    db,
    async api(method, path, body, headers = {}) {
      const res = await fetch(node.url + path, {
        method,
        headers: { "content-type": "application/json", ...headers },
        body: body === undefined ? undefined : typeof body === "string" ? body : JSON.stringify(body),
      });
      const text = await res.text();
      let json: any = null;
      try {
        json = text ? JSON.parse(text) : null;
      } catch {
        json = null;
      }
      return { status: res.status, json, text };
    },
  };
}
