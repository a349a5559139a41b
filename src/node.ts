// Wires one cronwheel node: store, membership, leader, planner, dispatcher, service and HTTP
// server. main.ts calls it for `serve`; tests call it to run real nodes in-process.

import { createApp } from "./api/app.ts";
import type { ServeConfig } from "./config.ts";
import { systemClock, type Clock } from "./core/clock.ts";
import { DEFAULT_DISPATCHER_OPTIONS, Dispatcher, type DispatcherEvents } from "./core/dispatcher.ts";
import { Handoff } from "./core/handoff.ts";
import { Leader } from "./core/leader.ts";
import { jsonLogger, type Logger } from "./core/log.ts";
import { Membership } from "./core/membership.ts";
import { LatenessWindow } from "./core/lateness-window.ts";
import { Metrics, SUB_MS_BUCKETS } from "./core/metrics.ts";
import { DEFAULT_PLANNER_OPTIONS, Planner, type PlannerEvents, type PlannerOptions } from "./core/planner.ts";
import { SchedulerService } from "./core/service.ts";
import type { WebhookSender } from "./core/webhook.ts";
import { httpSender } from "./net/http-sender.ts";
import { peerPoker } from "./net/peer-client.ts";
import { openStore } from "./store/index.ts";

export interface NodeHandle {
  url: string;
  port: number;
  nodeId: string;
  leader: Leader;
  stop(graceMs?: number): Promise<void>;
}

export interface NodeOverrides {
  clock?: Clock;
  send?: WebhookSender;
  log?: Logger;
  planner?: Partial<PlannerOptions>;
  events?: DispatcherEvents;
}

/** Heartbeats every second; a node silent for 3.5 s is no longer given deliveries. */
const HEARTBEAT_MS = 1_000;
const ALIVE_MS = 3_500;

export async function startNode(cfg: ServeConfig, o: NodeOverrides = {}): Promise<NodeHandle> {
  const clock = o.clock ?? systemClock;
  const log = o.log ?? jsonLogger(cfg.logLevel, { node: cfg.nodeId });
  const store = await openStore(cfg.db);

  // The HTTP server starts first: with --port 0 the advertised address needs the real port.
  let app: ReturnType<typeof createApp> | null = null;
  const server = Bun.serve({
    hostname: cfg.host,
    port: cfg.port,
    idleTimeout: 30,
    fetch: (req) => (app ? app.fetch(req) : new Response("starting", { status: 503 })),
  });
  const port = server.port ?? cfg.port;
  const url = `http://${cfg.host}:${port}`;
  const advertise = cfg.advertise ?? url;

  const membership = new Membership(store.nodes, clock, { nodeId: cfg.nodeId, address: advertise, heartbeatMs: HEARTBEAT_MS, aliveMs: ALIVE_MS }, log);
  const leader = new Leader(store.lease, clock, { nodeId: cfg.nodeId, leaseMs: cfg.leaseMs }, log);
  const metrics = new Metrics({ node: cfg.nodeId });
  const recentLateness = new LatenessWindow();
  const outcomes = metrics.counter("cronwheel_firings_total", "Firings by outcome recorded by this node");
  const lateness = metrics.histogram("cronwheel_lateness_ms", "How late first attempts started after their scheduled instant, ms");
  const latency = metrics.histogram("cronwheel_delivery_latency_ms", "Webhook request duration, ms");
  const events: DispatcherEvents = {
    onOutcome: (firing, outcome) => {
      outcomes({ outcome: outcome.state });
      o.events?.onOutcome?.(firing, outcome);
    },
    onSkipped: () => outcomes({ outcome: "SKIPPED" }),
    onLateness: (ms) => {
      lateness(Math.max(0, ms));
      recentLateness.add(Math.max(0, ms), clock.now());
    },
    onRequest: (ms) => latency(ms),
  };
  const dispatcher = new Dispatcher(
    store,
    clock,
    o.send ?? httpSender,
    () => membership.liveIds(),
    {
      ...DEFAULT_DISPATCHER_OPTIONS,
      nodeId: cfg.nodeId,
      signingSecret: cfg.signingSecret,
      maxInFlight: cfg.maxInFlight,
      lookaheadMs: cfg.planAheadMs,
      misfireThresholdMs: cfg.misfireThresholdMs,
    },
    log,
    events,
  );
  // The leader's cost of finding due work, per planning pass: it should follow the due jobs,
  // not the size of the jobs table (bench/tick-scaling.ts compares 10,000 and 1,000,000 jobs).
  const findDue = metrics.histogram("cronwheel_find_due_ms", "Time per planning pass spent reading the due jobs from the store, ms", SUB_MS_BUCKETS);
  const foundDue = metrics.counter("cronwheel_found_due_total", "Due jobs the planner read from the store");
  const enqueuedFirings = metrics.counter("cronwheel_enqueued_firings_total", "Firings the planner enqueued");
  const plannerEvents: PlannerEvents = {
    onPass: (p) => {
      findDue(p.findDueMs);
      foundDue({}, p.found);
      enqueuedFirings({}, p.enqueued);
    },
  };
  const handoff = new Handoff(cfg.nodeId, (id) => membership.addressOf(id), () => dispatcher.poke(), peerPoker(cfg.token), log);
  // Spreading by job keeps a job's firings on one node; by firing, a busy job uses every node.
  const ownerOf = (jobId: string, scheduledAt: number) =>
    membership.ownerOf(cfg.spread === "job" ? jobId : `${jobId}@${scheduledAt}`);
  const planner = new Planner(
    store,
    leader,
    clock,
    { ...DEFAULT_PLANNER_OPTIONS, misfireThresholdMs: cfg.misfireThresholdMs, horizonMs: cfg.planAheadMs, ...o.planner },
    (firings) => handoff.notify(firings),
    log,
    ownerOf,
    plannerEvents,
  );
  const service = new SchedulerService(store, clock, planner, dispatcher, leader, {
    ownerOf,
    notify: (firings) => handoff.notify(firings),
    members: () => membership.members(),
  });
  metrics.gauge("cronwheel_backlog", "Firings due and not finished (scheduled minus completed), all jobs", async () => [[{}, await service.backlog()]]);
  metrics.gauge("cronwheel_leader", "1 while this node holds the leader lease", async () => [[{}, leader.current() ? 1 : 0]]);
  metrics.gauge("cronwheel_epoch", "Epoch of the leader lease as the store has it", async () => [[{}, (await store.lease.read()).epoch]]);
  metrics.gauge("cronwheel_dispatch_queue", "Firings held by this node's dispatcher, by stage", async () => {
    const s = dispatcher.stats();
    return [[{ stage: "wheel" }, s.wheel], [{ stage: "waiting_for_slot" }, s.waiting], [{ stage: "ready" }, s.ready], [{ stage: "in_flight" }, s.inFlight]];
  });
  metrics.gauge("cronwheel_live_nodes", "Nodes this node sees as alive", async () => [[{}, membership.liveIds().length]]);
  app = createApp(service, {
    token: cfg.token,
    nodeId: cfg.nodeId,
    log,
    metrics: () => metrics.render(),
    lateness: () => recentLateness.percentiles(clock.now()),
  });

  await membership.start();
  await dispatcher.start();
  leader.start();
  planner.start();
  log.info("serving", { url, advertise, db: cfg.db, node_id: cfg.nodeId });

  let stopping: Promise<void> | null = null;
  return {
    url,
    port,
    nodeId: cfg.nodeId,
    leader,
    stop(graceMs = 10_000) {
      stopping ??= (async () => {
        await planner.stop();
        await leader.stop();
        await dispatcher.stop(graceMs);
        await membership.stop();
        await server.stop();
        store.close();
        log.info("stopped");
      })();
      return stopping;
    },
  };
}
