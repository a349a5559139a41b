// Job mixes for benches at scale, built one at a time by index so a million never sit in memory.

/** Twenty zones, DST and not, whole, half and quarter hours, both hemispheres. */
export const ZONES = [
  "UTC", "Europe/Berlin", "Europe/London", "America/New_York", "America/Chicago", "America/Los_Angeles", "America/Sao_Paulo",
  "Asia/Tokyo", "Asia/Kolkata", "Asia/Singapore", "Asia/Dubai", "Australia/Sydney", "Australia/Lord_Howe", "Pacific/Auckland",
  "Africa/Cairo", "Africa/Johannesburg", "Europe/Moscow", "Asia/Shanghai", "America/Denver", "Atlantic/Reykjavik",
];

const HOUR_MS = 3_600_000;
const DAY_MS = 24 * HOUR_MS;

/**
 * A day's realistic load, job j of many: two thirds daily crons in one of the 20 zones at a
 * fixed minute of some hour (half of them on the hour, a top-of-the-hour spike), one third
 * one-shots spread over the 24 h after the first hour from `now`.
 */
export function mixedJob(j: number, now: number, target: { url: string }): unknown {
  if (j % 3 === 2) return { id: `s-${j}`, schedule: { at: new Date(now + HOUR_MS + ((j * 7919) % DAY_MS)).toISOString() }, target };
  return { id: `c-${j}`, schedule: { cron: `${j % 2 === 0 ? 0 : j % 60} ${j % 24} * * *`, timezone: ZONES[j % ZONES.length] }, target };
}

/**
 * Like mixedJob, but nothing falls due for months or at least an hour: yearly crons in the 20
 * zones on a day about six months from `now`, and one-shots more than an hour ahead. Load that
 * is registered and never due during a run, to see whether it costs anything.
 */
export function farJob(j: number, now: number, target: { url: string }): unknown {
  if (j % 3 === 2) return { id: `far-s-${j}`, schedule: { at: new Date(now + 2 * HOUR_MS + ((j * 7919) % DAY_MS)).toISOString() }, target };
  const month = ((new Date(now).getUTCMonth() + 6) % 12) + 1;
  return {
    id: `far-c-${j}`,
    schedule: { cron: `${j % 60} ${j % 24} ${1 + (j % 28)} ${month} *`, timezone: ZONES[j % ZONES.length] },
    target,
  };
}
