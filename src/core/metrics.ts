// In-process metrics in the Prometheus text format: counters, gauges read at scrape time, and
// histograms with buckets fine enough to resolve milliseconds of lateness. No client library:
// the exposition format is small and this keeps the binary's dependencies to what it needs.

export type Labels = Record<string, string>;

/** Lateness and latency buckets, ms: resolve single milliseconds near zero, seconds in the tail. */
export const MS_BUCKETS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 30_000, 60_000];

/** For store reads that usually take well under a millisecond. */
export const SUB_MS_BUCKETS = [0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 5_000];

function labelText(labels: Labels): string {
  const parts = Object.entries(labels).map(([k, v]) => `${k}="${v.replace(/\\/g, "\\\\").replace(/"/g, '\\"').replace(/\n/g, "\\n")}"`);
  return parts.length ? `{${parts.join(",")}}` : "";
}

class Histogram {
  readonly counts: number[];
  sum = 0;
  count = 0;
  constructor(readonly buckets: number[]) {
    this.counts = new Array<number>(buckets.length).fill(0);
  }
  observe(v: number): void {
    this.sum += v;
    this.count++;
    for (let i = 0; i < this.buckets.length; i++) if (v <= this.buckets[i]!) this.counts[i]!++;
  }
}

interface Family {
  help: string;
  type: "counter" | "gauge" | "histogram";
}

/**
 * A series' key from its labels, computed once per distinct label values: metrics are recorded
 * once or twice per delivery, and escaping the label text every time was a tenth of a spike's CPU.
 */
class SeriesKeys {
  private readonly cache = new Map<string, string>();
  constructor(private readonly make: (labels: Labels) => string) {}

  of(labels: Labels): string {
    let id = "";
    for (const k in labels) id += `${k}\u0000${labels[k]}\u0001`;
    let key = this.cache.get(id);
    if (key === undefined) this.cache.set(id, (key = this.make(labels)));
    return key;
  }
}

export class Metrics {
  private readonly families = new Map<string, Family>();
  private readonly counters = new Map<string, Map<string, number>>();
  private readonly histograms = new Map<string, Map<string, Histogram>>();
  private readonly gauges: { name: string; read: () => Promise<[Labels, number][]> }[] = [];

  constructor(private readonly base: Labels) {}

  counter(name: string, help: string): (labels?: Labels, by?: number) => void {
    this.families.set(name, { help, type: "counter" });
    const series = new Map<string, number>();
    this.counters.set(name, series);
    const keys = new SeriesKeys((labels) => labelText({ ...this.base, ...labels }));
    return (labels = {}, by = 1) => {
      const key = keys.of(labels);
      series.set(key, (series.get(key) ?? 0) + by);
    };
  }

  histogram(name: string, help: string, buckets = MS_BUCKETS): (value: number, labels?: Labels) => void {
    this.families.set(name, { help, type: "histogram" });
    const series = new Map<string, Histogram>();
    this.histograms.set(name, series);
    const keys = new SeriesKeys((labels) => JSON.stringify({ ...this.base, ...labels }));
    return (value, labels = {}) => {
      const key = keys.of(labels);
      let h = series.get(key);
      if (!h) series.set(key, (h = new Histogram(buckets)));
      h.observe(value);
    };
  }

  /** A gauge computed when scraped (store counts, leadership). */
  gauge(name: string, help: string, read: () => Promise<[Labels, number][]>): void {
    this.families.set(name, { help, type: "gauge" });
    this.gauges.push({ name, read });
  }

  async render(): Promise<string> {
    const out: string[] = [];
    const head = (name: string) => {
      const f = this.families.get(name)!;
      out.push(`# HELP ${name} ${f.help}`, `# TYPE ${name} ${f.type}`);
    };
    for (const [name, series] of this.counters) {
      head(name);
      for (const [labels, v] of series) out.push(`${name}${labels} ${v}`);
    }
    for (const [name, series] of this.histograms) {
      head(name);
      for (const [key, h] of series) {
        const labels = JSON.parse(key) as Labels;
        h.buckets.forEach((b, i) => out.push(`${name}_bucket${labelText({ ...labels, le: String(b) })} ${h.counts[i]}`));
        out.push(`${name}_bucket${labelText({ ...labels, le: "+Inf" })} ${h.count}`);
        out.push(`${name}_sum${labelText(labels)} ${h.sum}`, `${name}_count${labelText(labels)} ${h.count}`);
      }
    }
    for (const g of this.gauges) {
      head(g.name);
      for (const [labels, v] of await g.read()) out.push(`${g.name}${labelText({ ...this.base, ...labels })} ${v}`);
    }
    return out.join("\n") + "\n";
  }
}
