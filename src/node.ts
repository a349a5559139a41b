// Wires one cronwheel node: store, leader, planner, dispatcher, service and HTTP server.
// main.ts calls it for `serve`; tests call it to run real nodes in-process.

import { createApp } from "./api/app.ts";
import type { ServeConfig } from "./config.ts";
import { systemClock, type Clock } from "./core/clock.ts";
import { DEFAULT_DISPATCHER_OPTIONS, Dispatcher, type DispatcherEvents } from "./core/dispatcher.ts";
import { Leader } from "./core/leader.ts";
import { jsonLogger, type Logger } from "./core/log.ts";
import { DEFAULT_PLANNER_OPTIONS, Planner, type PlannerOptions } from "./core/planner.ts";
import { SchedulerService } from "./core/service.ts";
import type { WebhookSender } from "./core/webhook.ts";
import { httpSender } from "./net/http-sender.ts";
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

export async function startNode(cfg: ServeConfig, o: NodeOverrides = {}): Promise<NodeHandle> {
  const clock = o.clock ?? systemClock;
  const log = o.log ?? jsonLogger(cfg.logLevel, { node: cfg.nodeId });
  const store = await openStore(cfg.db);
  const leader = new Leader(store.lease, clock, { nodeId: cfg.nodeId, leaseMs: cfg.leaseMs }, log);
  const dispatcher = new Dispatcher(
    store,
    clock,
    o.send ?? httpSender,
    {
      ...DEFAULT_DISPATCHER_OPTIONS,
      nodeId: cfg.nodeId,
      signingSecret: cfg.signingSecret,
      maxInFlight: cfg.maxInFlight,
      lookaheadMs: cfg.planAheadMs,
    },
    log,
    o.events,
  );
  const planner = new Planner(
    store,
    leader,
    clock,
    { ...DEFAULT_PLANNER_OPTIONS, misfireThresholdMs: cfg.misfireThresholdMs, horizonMs: cfg.planAheadMs, ...o.planner },
    () => dispatcher.poke(),
    log,
  );
  const service = new SchedulerService(store, clock, planner, dispatcher, leader);
  const app = createApp(service, { token: cfg.token, nodeId: cfg.nodeId, log });

  await dispatcher.start();
  leader.start();
  planner.start();
  const server = Bun.serve({ hostname: cfg.host, port: cfg.port, fetch: app.fetch, idleTimeout: 30 });
  const port = server.port ?? cfg.port;
  const url = `http://${cfg.host}:${port}`;
  log.info("serving", { url, db: cfg.db, node_id: cfg.nodeId });

  let stopping: Promise<void> | null = null;
  return {
    url,
    port,
    nodeId: cfg.nodeId,
    leader,
    stop(graceMs = 10_000) {
      stopping ??= (async () => {
        await server.stop();
        await planner.stop();
        await leader.stop();
        await dispatcher.stop(graceMs);
        store.close();
        log.info("stopped");
      })();
      return stopping;
    },
  };
}
