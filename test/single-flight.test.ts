// One run at a time; requests during a run make exactly one more run.

import { expect, test } from "bun:test";
import { SingleFlight } from "../src/core/single-flight.ts";

test("requests while running coalesce into one rerun; settled fires once all is done", async () => {
  let runs = 0;
  let settled = 0;
  const gates: (() => void)[] = [];
  const sf = new SingleFlight(
    () => new Promise<void>((resolve) => {
      runs++;
      gates.push(resolve);
    }),
    () => settled++,
  );
  sf.trigger();
  sf.trigger();
  sf.trigger();
  expect(runs).toBe(1);
  gates.shift()!();
  await Bun.sleep(0);
  expect(runs).toBe(2); // the three requests became one rerun
  expect(settled).toBe(0);
  gates.shift()!();
  await sf.idle();
  expect(runs).toBe(2);
  expect(settled).toBe(1);
  expect(sf.running).toBe(false);
});
