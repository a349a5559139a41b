// How the CLI shows jobs, firings and previews to people: aligned plain-text tables (no colour,
// no trailing spaces) and a key/value view of one job. `--json` bypasses all of this.

import type { FiringOut, JobOut } from "./client.ts";

const NONE = "-";

/** Columns padded to their widest cell, two spaces apart; the last column is not padded. */
export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? "").length)));
  const line = (cells: string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join("  ")
      .trimEnd();
  return [line(headers), ...rows.map(line)].join("\n");
}

/** An RFC 3339 instant as "2027-03-28 01:00:00" (UTC; milliseconds only when not zero). */
export function utc(iso: string | null | undefined): string {
  if (!iso) return NONE;
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return iso;
  const s = d.toISOString();
  return `${s.slice(0, 10)} ${s.slice(11, s.endsWith(".000Z") ? 19 : 23)}`;
}

/** One line per schedule: "cron 30 2 * * * Europe/Berlin", "every 90s", "at 2027-01-01 09:00:00". */
export function scheduleText(s: JobOut["schedule"]): string {
  if (s.cron !== undefined) {
    const extras = [s.dst_gap && `gap=${s.dst_gap}`, s.dst_overlap && `overlap=${s.dst_overlap}`].filter(Boolean);
    return [`cron ${s.cron}`, s.timezone ?? "UTC", ...extras].join(" ");
  }
  if (s.every !== undefined) return `every ${s.every}`;
  if (s.at !== undefined) return `at ${utc(s.at)}`;
  return JSON.stringify(s);
}

function oneLine(text: string | null | undefined, max: number): string {
  if (!text) return NONE;
  const flat = text.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

export function jobsTable(jobs: JobOut[]): string {
  return table(
    ["ID", "SCHEDULE", "NEXT FIRE (UTC)", "LAST FIRED", "PAUSED"],
    jobs.map((j) => [j.id, scheduleText(j.schedule), utc(j.next_fire_at), utc(j.last_fired_at), j.paused ? "yes" : "no"]),
  );
}

export function firingsTable(firings: FiringOut[]): string {
  return table(
    ["ID", "JOB", "SCHEDULED AT", "STATE", "ATTEMPTS", "LAST ERROR"],
    firings.map((f) => {
      const marks = [f.catchup && "catch-up", f.manual && "manual", f.waiting && "waiting"].filter(Boolean);
      const state = marks.length > 0 ? `${f.state} (${marks.join(", ")})` : f.state;
      return [f.id, f.job_id, utc(f.scheduled_at), state, String(f.attempts), oneLine(f.last_error, 60)];
    }),
  );
}

/** `jobs get`: every setting of one job, one per line. */
export function jobDetail(j: JobOut): string {
  const s = j.schedule;
  const window = s.start_at || s.end_at ? `${utc(s.start_at)} .. ${utc(s.end_at)}` : null;
  const pairs: [string, string | null | undefined][] = [
    ["id", j.id],
    ["schedule", scheduleText(s)],
    ["window", window],
    ["target", `${j.target.method ?? "POST"} ${j.target.url}`],
    ["timeout", j.target.timeout_ms !== undefined ? `${j.target.timeout_ms} ms` : null],
    ["paused", j.paused ? "yes" : "no"],
    ["next fire (UTC)", utc(j.next_fire_at)],
    ["last fired (UTC)", utc(j.last_fired_at)],
    ["backlog", j.backlog !== undefined ? String(j.backlog) : null],
    ["priority", j.priority],
    ["concurrency", j.concurrency ? `max ${j.concurrency.max}, overlap ${j.concurrency.overlap}, max_queue ${j.concurrency.max_queue}` : null],
    ["misfire", j.misfire ? `${j.misfire.policy}, max_catchup ${j.misfire.max_catchup}` : null],
    ["retry", j.retry ? `${j.retry.max_attempts} attempts, backoff ${j.retry.initial_backoff_ms}..${j.retry.max_backoff_ms} ms` : null],
    ["created (UTC)", j.created_at ? utc(j.created_at) : null],
    ["updated (UTC)", j.updated_at ? utc(j.updated_at) : null],
  ];
  const shown = pairs.filter((p): p is [string, string] => p[1] !== null && p[1] !== undefined);
  const width = Math.max(...shown.map(([k]) => k.length));
  return shown.map(([k, v]) => `${`${k}:`.padEnd(width + 1)}  ${v}`).join("\n");
}

/** Wall-clock time in `zone` with its UTC offset, e.g. "Sun 2027-03-28 03:00:00 +02:00". */
function wallClock(iso: string, zone: string): string {
  const parts = new Intl.DateTimeFormat("en-US", {
    timeZone: zone,
    weekday: "short",
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit",
    hourCycle: "h23",
    timeZoneName: "longOffset",
  }).formatToParts(new Date(iso));
  const p = (type: Intl.DateTimeFormatPartTypes) => parts.find((x) => x.type === type)?.value ?? "";
  return `${p("weekday")} ${p("year")}-${p("month")}-${p("day")} ${p("hour")}:${p("minute")}:${p("second")} ${p("timeZoneName").replace(/^GMT$/, "GMT+00:00").slice(3)}`;
}

/** Preview times as the server gives them (RFC 3339 UTC), with the local wall time in a real zone. */
export function previewText(times: string[], zone: string | null): string {
  if (!zone || zone === "UTC") return table(["TIME (UTC)"], times.map((t) => [t]));
  try {
    return table(["TIME (UTC)", `LOCAL (${zone})`], times.map((t) => [t, wallClock(t, zone)]));
  } catch {
    return table(["TIME (UTC)"], times.map((t) => [t])); // a zone this runtime's ICU does not know
  }
}
