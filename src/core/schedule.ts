// Schedules as the dispatcher, the API and preview see them: validation with human messages,
// and compilation into next(after) over all three kinds (at, cron, every). Pure: no I/O and
// no clock; every "now" comes from the caller. Zone/DST logic lives in cron-zone.ts.
import type { CronSchedule, Schedule } from "./model.ts";
import {
  MAX_INSTANT_MS,
  checkTimeZone,
  cronEverFires,
  cronFields,
  cronIterator,
  cronMatcher,
  daysFromCivil,
} from "./cron-zone.ts";

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** "<n>ms|s|m|h|d" (n a positive integer) -> milliseconds; "d" is a fixed 24 h, not a calendar day. */
export function parseEveryMs(every: string): number | null {
  const m = /^(\d+)(ms|s|m|h|d)$/.exec(every);
  if (m === null) return null;
  const ms = Number(m[1]) * (UNIT_MS[m[2] as string] as number);
  return ms >= 1 && Number.isSafeInteger(ms) ? ms : null;
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/**
 * Strict RFC 3339 date-time (offset or Z required, "T" separator) -> epoch ms.
 * Fractions beyond milliseconds are truncated; leap seconds (":60") are refused.
 */
export function parseInstantMs(s: string): number | null {
  const m = RFC3339.exec(s);
  if (m === null) return null;
  const [y, mo, d, h, mi, sec] = m.slice(1, 7).map(Number) as [number, number, number, number, number, number];
  if (mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || sec > 59) return null;
  if (d > new Date(Date.UTC(2000, mo, 0)).getUTCDate() && !(mo === 2 && d === 29)) return null;
  if (mo === 2 && d === 29 && !((y % 4 === 0 && y % 100 !== 0) || y % 400 === 0)) return null;
  let offsetMin = 0;
  if (m[8] === undefined) {
    const oh = Number(m[10]), om = Number(m[11]);
    if (oh > 23 || om > 59) return null;
    offsetMin = (m[9] === "-" ? -1 : 1) * (oh * 60 + om);
  }
  const frac = Number(((m[7] ?? "") + "000").slice(0, 3));
  return ((daysFromCivil(y, mo, d) * 24 + h) * 60 + mi) * 60_000 + sec * 1000 + frac - offsetMin * 60_000;
}

/**
 * SPEC: a wildcard job's minute or hour field begins with "*" (after expanding macros such as
 * @hourly; with 6 fields the minute field is the 2nd). "?" is cron-parser's synonym for "*",
 * so it counts too. Unparseable expressions are not wildcard.
 */
export function isWildcardCron(expr: string): boolean {
  const f = cronFields(expr);
  if (typeof f === "string") return false;
  return /^[*?]/.test(f[1] as string) || /^[*?]/.test(f[2] as string);
}

function kindOf(s: Schedule): "at" | "cron" | "every" | string {
  const o = s as unknown as Record<string, unknown>;
  const kinds = (["at", "cron", "every"] as const).filter((k) => o[k] !== undefined);
  if (kinds.length !== 1) return "a schedule needs exactly one of at, cron or every";
  const k = kinds[0] as string;
  if (typeof o[k] !== "string") return `${k} must be a string`;
  return k;
}

/** null when the schedule is usable, else a message for a human (one problem at a time). */
export function validateSchedule(s: Schedule): string | null {
  if (typeof s !== "object" || s === null) return "schedule must be an object";
  const kind = kindOf(s);
  const o = s as unknown as Record<string, unknown>;
  const bounds: Record<string, number> = {};
  for (const key of ["start_at", "end_at", "at"]) {
    const v = o[key];
    if (v === undefined) continue;
    const ms = typeof v === "string" ? parseInstantMs(v) : null;
    if (ms === null) return `${key} must be an RFC 3339 instant with an offset or Z, like "2027-01-01T10:00:00Z"; got ${JSON.stringify(v)}`;
    bounds[key] = ms;
  }
  if (bounds.start_at !== undefined && bounds.end_at !== undefined && bounds.start_at > bounds.end_at) {
    return `start_at (${o.start_at}) is after end_at (${o.end_at})`;
  }
  if (kind === "every") {
    if (parseEveryMs(o.every as string) === null) {
      return `every must be a positive whole number followed by ms, s, m, h or d (like "15m"); got ${JSON.stringify(o.every)}`;
    }
    return null;
  }
  if (kind !== "cron") return kind === "at" ? null : kind;
  const c = s as CronSchedule;
  if (typeof c.timezone !== "string") return "timezone must be a string (an IANA name)";
  const tzError = checkTimeZone(c.timezone);
  if (tzError !== null) return tzError;
  if (c.dst_gap !== undefined && c.dst_gap !== "shift" && c.dst_gap !== "skip") return `dst_gap must be "shift" or "skip"`;
  if (c.dst_overlap !== undefined && c.dst_overlap !== "first" && c.dst_overlap !== "both") {
    return `dst_overlap must be "first" or "both"`;
  }
  try {
    if (!cronEverFires(cronMatcher(c.cron))) return `cron "${c.cron}" is invalid: it never fires`;
  } catch (e) {
    return `cron "${c.cron}" is invalid: ${(e as Error).message}`;
  }
  return null;
}

export interface CompiledSchedule {
  /** First firing instant strictly greater than afterMs, within [start_at, end_at] (inclusive); null when exhausted. */
  next(afterMs: number): number | null;
}

/**
 * Compiles a schedule (validate it first: this throws on invalid input).
 *
 * `every` fires at anchorMs + k * interval for k >= 0, so the anchor itself is a firing
 * instant. Callers pass Job.anchorAt (start_at, else the creation time) and ask
 * next(creation time): a job created at t with every 10s then first fires at t + 10s, and one
 * with start_at S first fires at S. anchorMs is ignored for cron and at schedules.
 *
 * Cheap to call per firing: cron expressions and zone transition tables are cached module-wide.
 */
export function compileSchedule(s: Schedule, anchorMs: number): CompiledSchedule {
  const o = s as unknown as Record<string, unknown>;
  const startAt = typeof o.start_at === "string" ? parseInstantMs(o.start_at) : null;
  const endAt = typeof o.end_at === "string" ? parseInstantMs(o.end_at) : null;
  const lowest = startAt === null ? -Infinity : startAt - 1; // first allowed instant is > lowest
  const highest = endAt ?? MAX_INSTANT_MS;
  let raw: (after: number) => number | null;

  if ("at" in s && typeof s.at === "string") {
    const at = parseInstantMs(s.at);
    if (at === null) throw new Error(`invalid at: ${s.at}`);
    raw = (after) => (at > after ? at : null);
  } else if ("every" in s && typeof s.every === "string") {
    const interval = parseEveryMs(s.every);
    if (interval === null) throw new Error(`invalid every: ${s.every}`);
    raw = (after) => {
      const k = after < anchorMs ? 0 : Math.floor((after - anchorMs) / interval) + 1;
      return anchorMs + k * interval;
    };
  } else if ("cron" in s && typeof s.cron === "string") {
    const wild = isWildcardCron(s.cron);
    const tz = s.timezone ?? "UTC";
    const tzError = checkTimeZone(tz);
    if (tzError !== null) throw new Error(tzError);
    raw = cronIterator(
      cronMatcher(s.cron),
      tz,
      s.dst_gap ?? (wild ? "skip" : "shift"),
      s.dst_overlap ?? (wild ? "both" : "first"),
    );
  } else {
    throw new Error("a schedule needs exactly one of at, cron or every");
  }

  return {
    next(afterMs) {
      const t = raw(Math.max(afterMs, lowest));
      return t === null || t > highest ? null : t;
    },
  };
}

/** The next `count` firing instants strictly after fromMs (fewer if the schedule ends). */
export function previewTimes(s: Schedule, anchorMs: number, fromMs: number, count: number): number[] {
  const c = compileSchedule(s, anchorMs);
  const out: number[] = [];
  let t = c.next(fromMs);
  while (t !== null && out.length < count) {
    out.push(t);
    t = c.next(t);
  }
  return out;
}

/**
 * The most recent `limit` instants t with fromMs <= t <= toMs, ascending (misfire recovery).
 * Searches windows backwards from toMs, each 8x wider than the last, enumerating forward only
 * inside a window, so days of every-second firings cost about 8 * limit next() calls, not one
 * per second of the range; sparse schedules need only a few dozen windows over any range.
 */
export function lastInstantsUpTo(c: CompiledSchedule, fromMs: number, toMs: number, limit: number): number[] {
  const chunks: number[][] = [];
  let found = 0;
  let hi = toMs;
  let width = 60_000;
  while (found < limit && hi >= fromMs) {
    const lo = Math.max(fromMs, hi - width + 1);
    const want = limit - found;
    const window: number[] = [];
    for (let t = c.next(lo - 1); t !== null && t <= hi; t = c.next(t)) {
      window.push(t);
      if (window.length > 2 * want) window.splice(0, window.length - want); // keep memory bounded
    }
    const kept = window.slice(-want);
    chunks.push(kept);
    found += kept.length;
    hi = lo - 1;
    width *= 8;
  }
  return chunks.reverse().flat();
}
