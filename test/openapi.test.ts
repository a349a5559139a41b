// GET /openapi.json on a real node: an OpenAPI 3.1 document of SPEC's API whose request schemas
// are generated from the valibot schemas. The schemas are checked with a JSON Schema validator
// (ajv, draft 2020-12) against the same bodies and queries sent to the live API: what the
// document accepts, the API accepts (201/200), and what it rejects, the API rejects (400).

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import Ajv2020, { type ValidateFunction } from "ajv/dist/2020";
import { startTestNode, type TestNode } from "./helpers/node.ts";

const TOKEN = "t0ken";
const auth = { authorization: `Bearer ${TOKEN}` };

let node: TestNode;
let doc: any;
let ajv: Ajv2020;

beforeAll(async () => {
  node = await startTestNode(["--token", TOKEN]);
  const res = await fetch(`${node.url}/openapi.json`); // no token: the document is public
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toContain("application/json");
  doc = await res.json();

  ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
  // The formats the document uses; "uri" is checked the way valibot's url() does.
  ajv.addFormat("uri", (s: string) => URL.canParse(s));
  ajv.addFormat("date-time", (s: string) => !Number.isNaN(Date.parse(s)));
  // The OpenAPI document's own top-level fields are not JSON Schema keywords.
  ajv.addVocabulary(Object.keys(doc));
  ajv.addSchema(doc, "openapi.json");
});
afterAll(async () => {
  await node.stop(500);
});

const pointer = (...parts: string[]) => parts.map((p) => "/" + p.replaceAll("~", "~0").replaceAll("/", "~1")).join("");
const schemaAt = (...parts: string[]): ValidateFunction => ajv.compile({ $ref: `openapi.json#${pointer(...parts)}` });
const requestBody = (path: string, method: string) =>
  schemaAt("paths", path, method, "requestBody", "content", "application/json", "schema");

/** The query parameters of an operation as one object schema, as a client would check them. */
function querySchema(path: string, method: string): ValidateFunction {
  const params = (doc.paths[path][method].parameters ?? []).filter((p: any) => p.in === "query");
  return ajv.compile({
    type: "object",
    properties: Object.fromEntries(params.map((p: any) => [p.name, p.schema])),
    required: params.filter((p: any) => p.required).map((p: any) => p.name),
  });
}

const errorBody = () => schemaAt("components", "responses", "BadRequest", "content", "application/json", "schema");

function expectValid(validate: ValidateFunction, value: unknown, valid: boolean) {
  const ok = validate(value);
  if (ok !== valid) throw new Error(`expected ${valid ? "valid" : "invalid"}: ${JSON.stringify(value)}\n${JSON.stringify(validate.errors)}`);
}

const goodJob = (extra: Record<string, unknown> = {}) => ({
  schedule: { cron: "0 9 * * *", timezone: "Europe/Berlin" },
  target: { url: "http://127.0.0.1:9/hook" },
  ...extra,
});

describe("the document", () => {
  test("is OpenAPI 3.1 with every path of SPEC's API", () => {
    expect(doc.openapi).toMatch(/^3\.1\./);
    expect(typeof doc.info.title).toBe("string");
    expect(typeof doc.info.version).toBe("string");
    const expected: Record<string, string[]> = {
      "/v1/jobs": ["post", "get"],
      "/v1/jobs/batch": ["post"],
      "/v1/jobs/{id}": ["get", "put", "patch", "delete"],
      "/v1/jobs/{id}/pause": ["post"],
      "/v1/jobs/{id}/resume": ["post"],
      "/v1/jobs/{id}/trigger": ["post"],
      "/v1/jobs/{id}/firings": ["get"],
      "/v1/firings": ["get"],
      "/v1/firings/{id}": ["get"],
      "/v1/firings/{id}/cancel": ["post"],
      "/v1/firings/{id}/retry": ["post"],
      "/v1/preview": ["get"],
      "/v1/cluster": ["get"],
      "/healthz": ["get"],
      "/metrics": ["get"],
    };
    for (const [path, methods] of Object.entries(expected)) {
      expect(doc.paths[path]).toBeDefined();
      for (const m of methods) expect(doc.paths[path][m]?.responses).toBeDefined();
    }
  });

  test("response codes follow SPEC", () => {
    const codes = (path: string, method: string) => Object.keys(doc.paths[path][method].responses).sort();
    expect(codes("/v1/jobs", "post")).toEqual(["201", "400", "401", "409", "413"]);
    expect(codes("/v1/jobs/{id}", "put")).toEqual(expect.arrayContaining(["200", "201", "400", "401", "413"]));
    expect(codes("/v1/jobs/batch", "post")).toEqual(expect.arrayContaining(["201", "400", "401", "413"]));
    expect(codes("/v1/jobs/{id}", "get")).toEqual(expect.arrayContaining(["200", "401", "404"]));
    expect(codes("/v1/jobs/{id}", "delete")).toEqual(expect.arrayContaining(["204", "404"]));
    expect(codes("/v1/jobs/{id}/trigger", "post")).toEqual(expect.arrayContaining(["202", "404"]));
    expect(codes("/v1/firings/{id}/cancel", "post")).toEqual(expect.arrayContaining(["200", "202", "404", "409"]));
    expect(codes("/v1/firings/{id}/retry", "post")).toEqual(expect.arrayContaining(["202", "404", "409"]));
    expect(codes("/v1/preview", "get")).toEqual(expect.arrayContaining(["200", "400"]));
    expect(codes("/healthz", "get")).toEqual(["200"]);
    expect(doc.paths["/metrics"].get.responses["200"].content["text/plain"]).toBeDefined();
    // Every error response carries SPEC's error shape.
    expect(Object.keys(doc.components.responses).sort()).toEqual(["BadRequest", "Conflict", "NotFound", "PayloadTooLarge", "Unauthorized"]);
    for (const r of Object.values<any>(doc.components.responses)) {
      expect(r.content["application/json"].schema).toEqual({ $ref: "#/components/schemas/Error" });
    }
    expect(doc.components.schemas.Error.properties.error.required).toEqual(["code", "message", "issues"]);
  });

  test("bearer auth is declared; /healthz and /openapi.json are public, /v1 is not", async () => {
    expect(doc.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" });
    expect(doc.security).toEqual([{ bearer: [] }]);
    expect(doc.paths["/healthz"].get.security).toEqual([]);
    expect((await node.api("GET", "/v1/jobs")).status).toBe(401);
    expect((await node.api("GET", "/healthz")).status).toBe(200);
  });

  test("request bodies and query parameters come from the valibot schemas", () => {
    const body = (path: string, method: string) => doc.paths[path][method].requestBody.content["application/json"].schema;
    expect(body("/v1/jobs", "post")).toEqual({ $ref: "#/components/schemas/JobInput" });
    expect(body("/v1/jobs/{id}", "put")).toEqual({ $ref: "#/components/schemas/JobInput" });
    expect(body("/v1/jobs/batch", "post")).toEqual({ $ref: "#/components/schemas/BatchInput" });
    expect(body("/v1/jobs/{id}", "patch")).toEqual({ $ref: "#/components/schemas/PatchInput" });
    const s = doc.components.schemas;
    expect(s.JobInput.required).toEqual(["schedule", "target"]);
    expect(s.JobInput.additionalProperties).toBe(false);
    expect(s.Schedule.oneOf).toHaveLength(3);
    expect(s.Target.properties.timeout_ms).toMatchObject({ type: "integer", minimum: 1, default: 10000 });
    expect(s.BatchInput.properties.jobs).toMatchObject({ maxItems: 10000, items: { $ref: "#/components/schemas/JobInput" } });
    const names = (path: string) => doc.paths[path].get.parameters.map((p: any) => p.name).sort();
    expect(names("/v1/jobs")).toEqual(["cursor", "limit"]);
    expect(names("/v1/firings")).toEqual(["cursor", "limit", "state"]);
    expect(names("/v1/preview")).toEqual(["at", "count", "cron", "dst_gap", "dst_overlap", "end_at", "every", "from", "start_at", "timezone"]);
    // The converter left nothing behind that it could not name (e.g. the lazy schedule's fallback).
    expect(Object.keys(s).every((k) => /^[A-Z]/.test(k))).toBe(true);
  });

  test("every schema in the document compiles under strict ajv", () => {
    for (const name of Object.keys(doc.components.schemas)) expect(() => schemaAt("components", "schemas", name)).not.toThrow();
  });
});

describe("validating requests against the document agrees with the live API", () => {
  test("POST /v1/jobs: a good job passes and is created; bad ones fail and are 400", async () => {
    const validate = requestBody("/v1/jobs", "post");
    const errorShape = errorBody();

    const good = [
      goodJob(),
      goodJob({ id: "openapi-good", priority: "high", target: { url: "https://example.com/x", method: "get", timeout_ms: 300000 } }),
      { schedule: { every: "15m" }, target: { url: "http://127.0.0.1:9/h" }, retry: { max_attempts: 5 } },
      { schedule: { at: "2099-01-01T00:00:00Z" }, target: { url: "http://127.0.0.1:9/h", headers: { "X-Team": "data" } } },
    ];
    for (const body of good) {
      expectValid(validate, body, true);
      const r = await node.api("POST", "/v1/jobs", body, auth);
      expect(r.status).toBe(201);
    }

    const { target: _, ...noTarget } = goodJob();
    const bad: Record<string, unknown> = {
      "missing target": noTarget,
      "unknown field": goodJob({ colour: "blue" }),
      "unknown nested field": goodJob({ target: { url: "http://127.0.0.1:9/h", timeout: 5 } }),
      "bad priority": goodJob({ priority: "urgent" }),
      "timeout_ms 0": goodJob({ target: { url: "http://127.0.0.1:9/h", timeout_ms: 0 } }),
      "fractional timeout": goodJob({ target: { url: "http://127.0.0.1:9/h", timeout_ms: 1.5 } }),
      "two schedule kinds": goodJob({ schedule: { cron: "0 9 * * *", every: "1h" } }),
      "no schedule kind": goodJob({ schedule: { start_at: "2099-01-01T00:00:00Z" } }),
      "bad dst_gap": goodJob({ schedule: { cron: "0 9 * * *", dst_gap: "later" } }),
      "bad header name": goodJob({ target: { url: "http://127.0.0.1:9/h", headers: { "Bad Header": "x" } } }),
      "url not a URL": goodJob({ target: { url: "not a url" } }),
      "bad id": goodJob({ id: "-starts-with-dash" }),
      "max_attempts 0": goodJob({ retry: { max_attempts: 0 } }),
      "bad overlap": goodJob({ concurrency: { overlap: "sometimes" } }),
    };
    for (const [what, body] of Object.entries(bad)) {
      expect([what, validate(body)]).toEqual([what, false]);
      const r = await node.api("POST", "/v1/jobs", body, auth);
      expect([what, r.status]).toEqual([what, 400]);
      expectValid(errorShape, r.json, true);
    }
  });

  test("POST /v1/jobs/batch: a good batch passes and is created; bad ones fail and are 400", async () => {
    const validate = requestBody("/v1/jobs/batch", "post");
    const good = { jobs: [goodJob({ id: "batch-a" }), goodJob({ id: "batch-b", schedule: { every: "1h" } })] };
    expectValid(validate, good, true);
    const r = await node.api("POST", "/v1/jobs/batch", good, auth);
    expect(r.status).toBe(201);
    expect(r.json.ids).toEqual(["batch-a", "batch-b"]);
    expectValid(schemaAt("components", "schemas", "BatchCreated"), r.json, true);

    const bad: Record<string, unknown> = {
      "empty jobs": { jobs: [] },
      "no jobs": {},
      "unknown field": { jobs: [goodJob()], dry_run: true },
      "one bad job": { jobs: [goodJob(), goodJob({ priority: "urgent" })] },
      "jobs not an array": { jobs: goodJob() },
    };
    for (const [what, body] of Object.entries(bad)) {
      expect([what, validate(body)]).toEqual([what, false]);
      const res = await node.api("POST", "/v1/jobs/batch", body, auth);
      expect([what, res.status]).toEqual([what, 400]);
      expectValid(errorBody(), res.json, true);
    }
  });

  test("GET /v1/preview: query parameters validate as the API does", async () => {
    const validate = querySchema("/v1/preview", "get");
    const get = (q: Record<string, string>) => node.api("GET", `/v1/preview?${new URLSearchParams(q)}`, undefined, auth);

    const good = { cron: "0 9 * * *", timezone: "Europe/Berlin", count: "3", from: "2027-01-01T00:00:00Z" };
    expectValid(validate, good, true);
    const r = await get(good);
    expect(r.status).toBe(200);
    expect(r.json.times).toHaveLength(3);
    expectValid(schemaAt("components", "schemas", "Preview"), r.json, true);

    const bad: Record<string, Record<string, string>> = {
      "count not a number": { cron: "0 9 * * *", count: "abc" },
      "negative count": { cron: "0 9 * * *", count: "-1" },
      "bad dst_gap": { cron: "0 9 * * *", dst_gap: "later" },
      "bad dst_overlap": { cron: "0 9 * * *", dst_overlap: "twice" },
    };
    for (const [what, q] of Object.entries(bad)) {
      expect([what, validate(q)]).toEqual([what, false]);
      const res = await get(q);
      expect([what, res.status]).toEqual([what, 400]);
      expectValid(errorBody(), res.json, true);
    }
  });

  test("GET /v1/firings: state and limit validate as the API does", async () => {
    const validate = querySchema("/v1/firings", "get");
    const get = (q: Record<string, string>) => node.api("GET", `/v1/firings?${new URLSearchParams(q)}`, undefined, auth);
    expectValid(validate, { state: "DEAD", limit: "5" }, true);
    const r = await get({ state: "DEAD", limit: "5" });
    expect(r.status).toBe(200);
    expectValid(schemaAt("components", "schemas", "FiringPage"), r.json, true);
    const bad: Record<string, string>[] = [{ state: "BOGUS" }, { limit: "x" }, { limit: "" }];
    for (const q of bad) {
      expectValid(validate, q, false);
      expect((await get(q)).status).toBe(400);
    }
  });

  test("responses of the live API fit their loose schemas", async () => {
    const created = await node.api("POST", "/v1/jobs", goodJob({ id: "openapi-shape" }), auth);
    expectValid(schemaAt("components", "schemas", "Job"), created.json, true);
    const one = await node.api("GET", "/v1/jobs/openapi-shape", undefined, auth);
    expectValid(schemaAt("components", "schemas", "JobWithBacklog"), one.json, true);
    const fired = await node.api("POST", "/v1/jobs/openapi-shape/trigger", undefined, auth);
    expect(fired.status).toBe(202);
    expectValid(schemaAt("components", "schemas", "Firing"), fired.json, true);
    expectValid(schemaAt("components", "schemas", "JobPage"), (await node.api("GET", "/v1/jobs?limit=2", undefined, auth)).json, true);
    expectValid(schemaAt("components", "schemas", "Cluster"), (await node.api("GET", "/v1/cluster", undefined, auth)).json, true);
    expectValid(schemaAt("components", "schemas", "Health"), (await node.api("GET", "/healthz")).json, true);
    const unauthorized = await node.api("GET", "/v1/cluster");
    expect(unauthorized.status).toBe(401);
    expectValid(errorBody(), unauthorized.json, true);
  });
});
