// Builds the single-file executable dist/cronwheel from src/main.ts (`npm run build`).
// The plugin exists because libsql/index.js loads its native addon with require(`@libsql/${target}`),
// which the compiler cannot follow: we rewrite it into a static require of the target's index.node so it is embedded.

import { statSync } from "node:fs";
import { dirname, join, relative } from "node:path";
import { parseArgs } from "node:util";
import type { BunPlugin } from "bun";

// libSQL's prebuilt-package suffix (@libsql/<name>) -> Bun's compile target for the same platform.
const TARGETS: Record<string, Bun.Build.CompileTarget> = {
  "linux-x64-gnu": "bun-linux-x64",
  "linux-arm64-gnu": "bun-linux-arm64",
  "linux-x64-musl": "bun-linux-x64-musl",
  "linux-arm64-musl": "bun-linux-arm64-musl",
  "darwin-arm64": "bun-darwin-arm64",
  "darwin-x64": "bun-darwin-x64",
};

const ROOT = join(import.meta.dir, "..");
const OUTFILE = join(ROOT, "dist", "cronwheel");

// The executable is built from the running bun, so its libc (not the host's) decides gnu vs musl.
function hostTarget(): string {
  const { platform, arch } = process;
  if (platform === "linux") {
    const header = (process.report?.getReport() as { header?: { glibcVersionRuntime?: string } } | undefined)?.header;
    return `linux-${arch}-${header?.glibcVersionRuntime ? "gnu" : "musl"}`;
  }
  return `${platform}-${arch}`;
}

function fail(message: string): never {
  console.error(`build: ${message}`);
  process.exit(1);
}

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: { target: { type: "string" } }, // e.g. --target linux-arm64-gnu to cross-compile
  strict: true,
});
const host = hostTarget();
const target = values.target ?? host;
const bunTarget = TARGETS[target];
if (!bunTarget) fail(`unsupported target "${target}"; supported: ${Object.keys(TARGETS).join(", ")}`);

// The addon for the target must be installed (npm only installs the host's one unless asked, e.g.
// `npm install --no-save --force @libsql/linux-arm64-gnu` or `npm install --os=... --cpu=...`).
const addonSpecifier = `@libsql/${target}/index.node`;
let addonPath: string;
try {
  const libsqlDir = dirname(Bun.resolveSync("libsql", Bun.resolveSync("@libsql/client", ROOT)));
  addonPath = Bun.resolveSync(addonSpecifier, libsqlDir);
} catch {
  fail(`the libSQL native addon for ${target} is not installed (cannot resolve "${addonSpecifier}"); run npm ci on a ${target} machine or install @libsql/${target}`);
}

const DYNAMIC_REQUIRE = "require(`@libsql/${target}`)";

const libsqlNativeAddon: BunPlugin = {
  name: "libsql-static-native-addon",
  setup(build) {
    build.onLoad({ filter: /[\\/]node_modules[\\/]libsql[\\/]index\.js$/ }, async (args) => {
      const source = await Bun.file(args.path).text();
      const count = source.split(DYNAMIC_REQUIRE).length - 1;
      if (count !== 1) {
        throw new Error(`${args.path}: expected exactly one ${DYNAMIC_REQUIRE}, found ${count}; libsql changed, update scripts/build.ts`);
      }
      return { contents: source.replace(DYNAMIC_REQUIRE, `require(${JSON.stringify(addonSpecifier)})`), loader: "js" };
    });
  },
};

const started = performance.now();
let result: Bun.BuildOutput;
try {
  result = await Bun.build({
    // The embedded database's thread is its own entrypoint: Bun bundles workers only when listed.
    entrypoints: [join(ROOT, "src", "main.ts"), join(ROOT, "src", "store", "db-worker.ts")],
    target: "bun",
    minify: true,
    sourcemap: "linked",
    plugins: [libsqlNativeAddon],
    // Config comes from flags and CRONWHEEL_* variables only, never from files in the working directory.
    compile: {
      ...(values.target ? { target: bunTarget } : {}), // default: the running bun's own platform, no download
      outfile: OUTFILE,
      autoloadDotenv: false,
      autoloadBunfig: false,
    },
  });
} catch (err) {
  // Bun.build throws an AggregateError on failure; print each message.
  const errors = err instanceof AggregateError ? err.errors : [err];
  for (const e of errors) console.error(e);
  fail("Bun.build failed");
}
if (!result.success) {
  for (const log of result.logs) console.error(log);
  fail("Bun.build failed");
}

const seconds = ((performance.now() - started) / 1000).toFixed(1);
const mib = (statSync(OUTFILE).size / 1024 / 1024).toFixed(1);
console.log(`built ${OUTFILE} (${mib} MiB, ${target}, addon ${relative(ROOT, addonPath)}) in ${seconds}s`);
