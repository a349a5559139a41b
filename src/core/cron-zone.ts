// Zone-aware cron iteration: which UTC instants a cron expression fires at in an IANA zone,
// including the DST policy of SPEC "Time zones and DST". cron-parser only parses and validates;
// matching runs here on wall-clock seconds, and all zone logic uses Temporal's transition data.
import { CronExpressionParser } from "cron-parser";
import { Temporal } from "@js-temporal/polyfill";
import type { DstGapPolicy, DstOverlapPolicy } from "./model.ts";

const DAY_MS = 86_400_000;
const YEAR_MS = 365.2425 * DAY_MS;
/** Largest instant a JS Date can hold; later instants are treated as "never". */
export const MAX_INSTANT_MS = 8.64e15;
/** next() looks this far past its starting point; a validated cron always matches well within it. */
const HORIZON_MS = 100 * YEAR_MS;

// ---- calendar arithmetic on "wall time as if UTC" (days since 1970-01-01) ----
// Hinnant's civil-date algorithms: integer-only, valid far beyond any schedule's range.
export function daysFromCivil(y: number, m: number, d: number): number {
  y -= m <= 2 ? 1 : 0;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  return era * 146097 + yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy - 719468;
}

function civilFromDays(z: number): [number, number, number] {
  z += 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const d = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const m = mp < 10 ? mp + 3 : mp - 9;
  return [yoe + era * 400 + (m <= 2 ? 1 : 0), m, d];
}

function daysInMonth(y: number, m: number): number {
  if (m === 2) return (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 29 : 28;
  return m === 4 || m === 6 || m === 9 || m === 11 ? 30 : 31;
}

// ---- cron expression: normalisation and parsing ----

// The classic macros in 6-field form (cron-parser's table is not exported from its index and is
// matched case-sensitively; @midnight is added, its @secondly/@weekdays-style extras are not offered).
const MACROS: Record<string, string> = {
  "@yearly": "0 0 0 1 1 *",
  "@annually": "0 0 0 1 1 *",
  "@monthly": "0 0 0 1 * *",
  "@weekly": "0 0 0 * * 0",
  "@daily": "0 0 0 * * *",
  "@midnight": "0 0 0 * * *",
  "@hourly": "0 0 * * * *",
};

/** Expands macros and checks the field count; returns 6 fields (seconds first) or an error message. */
export function cronFields(expr: string): string[] | string {
  let text = expr.trim();
  if (text.startsWith("@")) {
    const macro = MACROS[text.toLowerCase()];
    if (macro === undefined) return `unknown macro "${text}" (use @yearly, @monthly, @weekly, @daily, @midnight or @hourly)`;
    text = macro;
  }
  const fields = text.split(/\s+/);
  if (fields.length === 5) fields.unshift("0");
  else if (fields.length !== 6) {
    return `expected 5 fields (minute hour day-of-month month day-of-week) or 6 (leading seconds), got ${text === "" ? 0 : fields.length}`;
  }
  return fields;
}

const FIELD_NAMES = ["second", "minute", "hour", "day-of-month", "month", "day-of-week"];

/** Precomputed lookup tables for one expression; shared by every job using it. */
export class CronMatcher {
  // xGE[v] = smallest allowed value >= v, or -1 (one sentinel slot past the range).
  private readonly secGE = new Int8Array(61).fill(-1);
  private readonly minGE = new Int8Array(61).fill(-1);
  private readonly hourGE = new Int8Array(25).fill(-1);
  private readonly monthGE = new Int8Array(14).fill(-1);
  private readonly domOk = new Uint8Array(32);
  private readonly dowOk = new Uint8Array(7);
  private readonly dowLastOk = new Uint8Array(7);
  private readonly domLast: boolean;
  private readonly dowLast: boolean;
  private readonly nth: number;
  private readonly domWild: boolean;
  private readonly dowWild: boolean;

  constructor(six: string[]) {
    // Hashed values ("H") are seeded randomly per parse in cron-parser: nodes would disagree.
    for (const [i, f] of six.entries()) {
      if (f.replace(/[a-z]{3}/gi, "").includes("H")) {
        throw new Error(`${FIELD_NAMES[i]} field "${f}": hashed values (H) are not supported`);
      }
    }
    const p = CronExpressionParser.parse(six.join(" "), { tz: "UTC" }).fields;
    const fill = (ge: Int8Array, values: readonly unknown[], max: number) => {
      const ok = new Set(values.filter((v): v is number => typeof v === "number"));
      for (let v = max; v >= 0; v--) ge[v] = ok.has(v) ? v : (ge[v + 1] ?? -1);
    };
    fill(this.secGE, p.second.values, 59);
    fill(this.minGE, p.minute.values, 59);
    fill(this.hourGE, p.hour.values, 23);
    fill(this.monthGE, p.month.values, 12);
    for (const v of p.dayOfMonth.values) if (typeof v === "number") this.domOk[v] = 1;
    for (const v of p.dayOfWeek.values) {
      if (typeof v === "number") this.dowOk[v % 7] = 1;
      else if (/^\dL$/.test(v)) this.dowLastOk[Number(v[0]) % 7] = 1;
    }
    this.domLast = p.dayOfMonth.hasLastChar;
    this.dowLast = p.dayOfWeek.hasLastChar;
    this.nth = p.dayOfWeek.nthDay;
    this.domWild = p.dayOfMonth.isWildcard;
    this.dowWild = p.dayOfWeek.isWildcard;
  }

  /**
   * Mirrors cron-parser's own day rule (CronExpression#matchDayOfMonth, v5): when both
   * day-of-month and day-of-week are restricted (anything but a bare * or ?, so even "1-31"
   * counts as restricted) a day matches if EITHER matches (Vixie cron OR); otherwise only the
   * restricted one decides. "L" in day-of-month = last day; "5L" = last Friday; "1#2" = 2nd Monday.
   */
  dayMatches(y: number, m: number, d: number, weekday: number): boolean {
    const last = daysInMonth(y, m);
    const dom = this.domOk[d] === 1 || (this.domLast && d === last);
    const dow =
      (this.dowOk[weekday] === 1 && (this.nth <= 0 || Math.ceil(d / 7) === this.nth)) ||
      (this.dowLast && d > last - 7 && this.dowLastOk[weekday] === 1);
    if (!this.domWild && !this.dowWild) return dom || dow;
    if (this.dowWild) return dom;
    return dow;
  }

  /** Smallest matching second-of-day >= sod, or -1. O(1) via the lookup tables. */
  private timeOfDayGE(sod: number): number {
    const h = Math.floor(sod / 3600), mi = Math.floor(sod / 60) % 60, s = sod % 60;
    const first = (H: number, M: number) => H * 3600 + M * 60 + (this.secGE[0] as number);
    const H = this.hourGE[h] as number;
    if (H < 0) return -1;
    const M0 = this.minGE[0] as number;
    if (H > h) return first(H, M0);
    const M = this.minGE[mi] as number;
    const nextHour = () => {
      const H2 = this.hourGE[h + 1] as number;
      return H2 < 0 ? -1 : first(H2, M0);
    };
    if (M < 0) return nextHour();
    if (M > mi) return first(H, M);
    const S = this.secGE[s] as number;
    if (S >= 0) return H * 3600 + M * 60 + S;
    const M2 = this.minGE[mi + 1] as number;
    return M2 >= 0 ? first(H, M2) : nextHour();
  }

  /** First matching wall time (ms, "as if UTC") >= loMs, searching through the day of limitMs; else null. */
  nextWall(loMs: number, limitMs: number): number | null {
    const t = Math.ceil(loMs / 1000);
    let days = Math.floor(t / 86400);
    let sod = t - days * 86400;
    const limitDays = Math.floor(limitMs / DAY_MS);
    while (days <= limitDays) {
      const [y, m, d] = civilFromDays(days);
      if ((this.monthGE[m] as number) !== m) {
        const nm = this.monthGE[m + 1] as number;
        days = nm > 0 ? daysFromCivil(y, nm, 1) : daysFromCivil(y + 1, this.monthGE[1] as number, 1);
        sod = 0;
        continue;
      }
      // 1970-01-01 was a Thursday (4).
      if (this.dayMatches(y, m, d, (((days + 4) % 7) + 7) % 7)) {
        const r = this.timeOfDayGE(sod);
        if (r >= 0) return (days * 86400 + r) * 1000;
      }
      days++;
      sod = 0;
    }
    return null;
  }
}

const matcherCache = new Map<string, CronMatcher | Error>();

/** Parsed matcher for an expression (cached, errors too); throws Error with a human message. */
export function cronMatcher(expr: string): CronMatcher {
  let hit = matcherCache.get(expr);
  if (hit === undefined) {
    hit = buildMatcher(expr);
    if (matcherCache.size >= 10_000) matcherCache.clear(); // crude bound; re-parsing is cheap
    matcherCache.set(expr, hit);
  }
  if (hit instanceof Error) throw hit;
  return hit;
}

function buildMatcher(expr: string): CronMatcher | Error {
  const six = cronFields(expr);
  if (typeof six === "string") return new Error(six);
  try {
    return new CronMatcher(six);
  } catch (e) {
    const msg = (e as Error).message;
    if (msg === "Invalid explicit day of month definition") return new Error("it never fires (no month has that day)");
    // Name the offending field: parse each one alone with the others left as wildcards.
    for (let i = 0; i < 6; i++) {
      const probe = ["*", "*", "*", "*", "*", "*"];
      probe[i] = six[i] as string;
      try {
        CronExpressionParser.parse(probe.join(" "), { tz: "UTC" });
      } catch (fe) {
        return new Error(`${FIELD_NAMES[i]} field "${six[i]}": ${(fe as Error).message}`);
      }
    }
    return new Error(msg);
  }
}

// ---- per-zone table of UTC-offset transitions, filled lazily from Temporal ----

class ZoneTable {
  /** Transition instants, ascending, with the offset (ms) just before and from each on. */
  readonly at: number[] = [];
  readonly before: number[] = [];
  readonly after: number[] = [];
  /** Transitions are known exactly for instants in [from, to). */
  private from: number;
  private to: number;
  private readonly base: number;

  constructor(private readonly tz: string, around: number) {
    this.from = this.to = around;
    this.base = this.offsetAt(around);
  }

  private zdt(ms: number): Temporal.ZonedDateTime {
    return Temporal.Instant.fromEpochMilliseconds(ms).toZonedDateTimeISO(this.tz);
  }

  private offsetAt(ms: number): number {
    return this.zdt(ms).offsetNanoseconds / 1e6;
  }

  private extendForward(goal: number): void {
    goal = Math.min(goal, MAX_INSTANT_MS - DAY_MS);
    while (this.to <= goal) {
      const z = this.zdt(this.to - 1).getTimeZoneTransition("next");
      if (z === null) {
        this.to = Infinity;
        return;
      }
      const t = z.epochMilliseconds;
      // Coverage is contiguous, so the offset before t is the one after the last known transition.
      const n = this.after.length;
      this.before.push(n > 0 ? (this.after[n - 1] as number) : this.base);
      this.at.push(t);
      this.after.push(z.offsetNanoseconds / 1e6);
      this.to = t + 1;
    }
    if (this.to >= MAX_INSTANT_MS - DAY_MS) this.to = Infinity; // Temporal's range ends there
  }

  private extendBackward(goal: number): void {
    goal = Math.max(goal, -MAX_INSTANT_MS + DAY_MS);
    while (this.from > goal) {
      const z = this.zdt(this.from).getTimeZoneTransition("previous");
      if (z === null) {
        this.from = -Infinity;
        return;
      }
      const t = z.epochMilliseconds;
      this.at.unshift(t);
      this.before.unshift(this.offsetAt(t - 1));
      this.after.unshift(z.offsetNanoseconds / 1e6);
      this.from = t;
    }
    if (this.from <= -MAX_INSTANT_MS + DAY_MS) this.from = -Infinity;
  }

  /** Index of the segment holding instant x: the count of transitions at or before x. */
  segmentOf(x: number): number {
    if (x < this.from) this.extendBackward(x - 2 * YEAR_MS);
    if (x >= this.to) this.extendForward(x + 2 * YEAR_MS);
    let lo = 0, hi = this.at.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((this.at[mid] as number) <= x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** UTC offset (ms) in force throughout segment i. */
  offset(i: number): number {
    if (i > 0) return this.after[i - 1] as number;
    return this.at.length > 0 ? (this.before[0] as number) : this.base;
  }

  /** Exclusive end instant of segment i (Infinity when no transition follows). */
  segmentEnd(i: number): number {
    while (i >= this.at.length) {
      if (this.to === Infinity) return Infinity;
      this.extendForward(this.to + 2 * YEAR_MS);
    }
    return this.at[i] as number;
  }
}

const zoneCache = new Map<string, ZoneTable>();

function zoneTable(tz: string, around: number): ZoneTable {
  let z = zoneCache.get(tz);
  if (z === undefined) {
    z = new ZoneTable(tz, around);
    zoneCache.set(tz, z);
  }
  return z;
}

/**
 * Returns next(after): the first firing instant strictly after `after`, or null.
 *
 * The timeline is cut into segments of constant UTC offset o; inside one, a wall time w
 * is the instant w - o, so wall order is instant order. Walking segments forward:
 * - a spring-forward transition T (offset grows) hides the wall times [T+before, T+after);
 *   "shift" fires once at T if any of them matches, "skip" ignores them;
 * - a fall-back transition T (offset shrinks) repeats [T+after, T+before) in the new
 *   segment; "first" starts that segment's wall search at T+before, "both" keeps them.
 * Equal instants (a shifted gap firing and a real match at T) collapse because next()
 * only ever returns the least instant > after.
 */
export function cronIterator(
  matcher: CronMatcher,
  tz: string,
  gap: DstGapPolicy,
  overlap: DstOverlapPolicy,
): (after: number) => number | null {
  return (after) => {
    const lo = Math.floor(after) + 1;
    if (lo > MAX_INSTANT_MS) return null;
    const limit = Math.min(lo + HORIZON_MS, MAX_INSTANT_MS + DAY_MS);
    const zone = zoneTable(tz, lo);
    let i = zone.segmentOf(lo);
    for (;;) {
      const o = zone.offset(i);
      const start = i > 0 ? (zone.at[i - 1] as number) : -Infinity;
      const end = zone.segmentEnd(i);
      let wallLo = Math.max(start, lo) + o;
      if (i > 0) {
        const ob = zone.before[i - 1] as number;
        if (ob < o && gap === "shift" && start >= lo) {
          const w = matcher.nextWall(start + ob, start + o);
          if (w !== null && w < start + o) return start;
        }
        if (ob > o && overlap === "first") wallLo = Math.max(wallLo, start + ob);
      }
      const w = matcher.nextWall(wallLo, limit);
      if (w === null) return null;
      const instant = w - o;
      if (instant < end) return instant > MAX_INSTANT_MS ? null : instant;
      i++;
    }
  };
}

const tzChecks = new Map<string, string | null>();

/** null for a usable IANA zone name (Temporal knows it); an error message for unknown names and fixed offsets. */
export function checkTimeZone(tz: string): string | null {
  let hit = tzChecks.get(tz);
  if (hit === undefined) {
    hit = resolveTimeZone(tz);
    if (tzChecks.size >= 10_000) tzChecks.clear();
    tzChecks.set(tz, hit);
  }
  return hit;
}

function resolveTimeZone(tz: string): string | null {
  let id: string;
  try {
    id = Temporal.Instant.fromEpochMilliseconds(0).toZonedDateTimeISO(tz).timeZoneId;
  } catch {
    return `unknown time zone "${tz}" (use an IANA name such as "Europe/Berlin")`;
  }
  if (/^[+-]/.test(id)) return `time zone "${tz}" is a fixed UTC offset; use an IANA name such as "Europe/Berlin"`;
  return null;
}

/** True if the cron matches some wall time in 2000–2099 (a full 28-year weekday cycle, leap years included). */
export function cronEverFires(matcher: CronMatcher): boolean {
  const from = daysFromCivil(2000, 1, 1) * DAY_MS;
  return matcher.nextWall(from, daysFromCivil(2099, 12, 31) * DAY_MS) !== null;
}
