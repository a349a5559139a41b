// The cronwheel binary: `cronwheel serve [flags]` runs a node until SIGTERM/SIGINT; `jobs`,
// `firings` and `preview` are the command-line client (src/cli).

import { helpText, runCli } from "./cli/main.ts";
import { ConfigError, parseServeConfig, usage } from "./config.ts";
import { startNode } from "./node.ts";

async function serve(argv: string[]): Promise<void> {
  let cfg;
  try {
    cfg = parseServeConfig(argv, process.env);
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    console.error(`cronwheel: ${err.message}\n\n${usage()}`);
    process.exit(2);
  }
  const node = await startNode(cfg);
  const shutdown = (signal: string) => {
    console.error(JSON.stringify({ ts: new Date().toISOString(), level: "info", msg: "shutting down", signal }));
    node.stop().then(() => process.exit(0), () => process.exit(1));
  };
  process.on("SIGTERM", () => shutdown("SIGTERM"));
  process.on("SIGINT", () => shutdown("SIGINT"));
}

const [command, ...rest] = process.argv.slice(2);
switch (command) {
  case "serve":
    await serve(rest);
    break;
  case "jobs":
  case "firings":
  case "preview":
    process.exitCode = await runCli(command, rest);
    break;
  case undefined:
  case "help":
  case "--help":
  case "-h":
    console.log(helpText());
    break;
  default:
    console.error(`cronwheel: unknown command "${command}"\n\n${helpText()}`);
    process.exit(2);
}
