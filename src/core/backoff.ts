// Delivery retry policy as pure functions: which responses are worth retrying, how long to
// wait (exponential backoff with equal jitter), and how much of a receiver's Retry-After to
// honour. No clock and no randomness of its own: both come in as arguments.

export interface BackoffPolicy {
  initial_backoff_ms: number;
  max_backoff_ms: number;
}

/**
 * The most a Retry-After header can push a retry out. A receiver (buggy, or hostile) must
 * not be able to park a firing for days; past an hour the firing is better retried and, if
 * still refused, left to the attempt limit. The cap only bounds what Retry-After imposes: a
 * policy whose own max_backoff_ms is above an hour keeps its longer delays.
 */
export const RETRY_AFTER_CAP_MS = 3_600_000;

/**
 * Delay before the next attempt, in whole ms, after attempt `attempt` (1-based) failed.
 * base = min(max_backoff_ms, initial_backoff_ms * 2^(attempt-1)); the delay is drawn from
 * [base/2, base] ("equal jitter": unlike full jitter it never retries almost at once, and it
 * still spreads a burst of failures so they do not retry in lockstep). With a Retry-After,
 * the delay is max(jittered, min(retryAfterMs, RETRY_AFTER_CAP_MS)).
 */
export function retryDelayMs(
  attempt: number,
  policy: BackoffPolicy,
  random: () => number,
  retryAfterMs?: number,
): number {
  if (!Number.isInteger(attempt) || attempt < 1) throw new RangeError(`attempt must be an integer >= 1, got ${attempt}`);
  const { initial_backoff_ms: initialMs, max_backoff_ms: maxMs } = policy;
  if (!(initialMs >= 0) || !(maxMs >= 0) || !Number.isFinite(initialMs) || !Number.isFinite(maxMs)) {
    throw new RangeError(`backoff policy needs finite, non-negative times, got ${JSON.stringify(policy)}`);
  }
  // Past 2^52 the product only grows towards Infinity; clamping the exponent keeps 0 * 2^n finite.
  const baseMs = Math.min(maxMs, initialMs * 2 ** Math.min(attempt - 1, 52));
  const jitteredMs = baseMs / 2 + random() * (baseMs / 2);
  const honouredMs =
    retryAfterMs !== undefined && retryAfterMs > 0 ? Math.min(retryAfterMs, RETRY_AFTER_CAP_MS) : 0;
  return Math.round(Math.max(jitteredMs, honouredMs));
}

/** 408 Request Timeout, 429 Too Many Requests and every 5xx; other statuses will not improve by waiting. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || (status >= 500 && status <= 599);
}

/**
 * A Retry-After value (RFC 9110 §10.2.3) as ms from nowMs: delta-seconds or an HTTP-date in
 * any of the three formats recipients must accept. undefined when absent or unparseable;
 * a date in the past gives 0. Date.parse is not used: it accepts far more than HTTP-dates and
 * reads the zone-less asctime format as local time.
 */
export function parseRetryAfterMs(header: string | null, nowMs: number): number | undefined {
  if (header === null) return undefined;
  const value = header.trim();
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const dateMs = parseHttpDate(value, nowMs);
  return dateMs === undefined ? undefined : Math.max(0, dateMs - nowMs);
}

const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const TIME = String.raw`(\d{2}):(\d{2}):(\d{2})`;
// Sun, 06 Nov 1994 08:49:37 GMT (the one senders must use)
const IMF_FIXDATE = new RegExp(String.raw`^[a-z]{3}, (\d{2}) ([a-z]{3}) (\d{4}) ${TIME} GMT$`, "i");
// Sunday, 06-Nov-94 08:49:37 GMT (obsolete RFC 850)
const RFC850_DATE = new RegExp(String.raw`^[a-z]{6,9}, (\d{2})-([a-z]{3})-(\d{2}) ${TIME} GMT$`, "i");
// Sun Nov  6 08:49:37 1994 (obsolete asctime, always GMT)
const ASCTIME_DATE = new RegExp(String.raw`^[a-z]{3} ([a-z]{3}) ([ \d]\d) ${TIME} (\d{4})$`, "i");

function parseHttpDate(value: string, nowMs: number): number | undefined {
  let m = IMF_FIXDATE.exec(value);
  if (m) return utc(Number(m[3]), m[2], Number(m[1]), Number(m[4]), Number(m[5]), Number(m[6]));
  m = RFC850_DATE.exec(value);
  if (m) {
    // RFC 9110: a two-digit year that would be more than 50 years ahead is in the past century.
    const nowYear = new Date(nowMs).getUTCFullYear();
    let year = Math.floor(nowYear / 100) * 100 + Number(m[3]);
    if (year > nowYear + 50) year -= 100;
    return utc(year, m[2], Number(m[1]), Number(m[4]), Number(m[5]), Number(m[6]));
  }
  m = ASCTIME_DATE.exec(value);
  if (m) return utc(Number(m[6]), m[1], Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5]));
  return undefined;
}

function utc(
  year: number,
  monthName: string | undefined,
  day: number,
  hour: number,
  minute: number,
  second: number,
): number | undefined {
  const month = MONTHS.indexOf(monthName?.toLowerCase() ?? "");
  // Second 60 is allowed (a leap second, as RFC 9110 does); hours and minutes are not rolled over.
  if (month < 0 || hour > 23 || minute > 59 || second > 60) return undefined;
  // setUTCFullYear rather than Date.UTC, which reads years 0-99 as 1900-1999.
  const date = new Date(0);
  date.setUTCFullYear(year, month, day);
  // 31 Feb and friends roll over into the next month: refuse them instead. (Checked before
  // the time is set, so 23:59:60 on the last day of a month stays valid.)
  if (date.getUTCMonth() !== month || date.getUTCDate() !== day) return undefined;
  return date.setUTCHours(hour, minute, second, 0);
}
