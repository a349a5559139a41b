// A node's GET /metrics read back as numbers, for benches that measure from the node's own
// counters (the Prometheus text format; comments skipped, every sample kept).

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export async function scrapeMetrics(url: string): Promise<Sample[]> {
  const r = await fetch(`${url}/metrics`);
  if (!r.ok) throw new Error(`GET /metrics: HTTP ${r.status}`);
  const samples: Sample[] = [];
  for (const line of (await r.text()).split("\n")) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[k!] = v!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

/** Sum of the samples of one name whose labels include `labels` (0 when there are none yet). */
export function metricSum(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((n, s) => n + s.value, 0);
}
