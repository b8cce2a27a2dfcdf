import { type Figure, type Target } from './types.js';

export interface Summary {
  runs: number;
  median: number;
  p95: number;
  p99: number;
  min: number;
  max: number;
}

/** Nearest-rank percentile (no interpolation): the value at rank ceil(p/100 × n). */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) throw new Error('percentile of no samples');
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1] as number;
}

export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  return {
    runs: sorted.length,
    median: percentile(sorted, 50),
    p95: percentile(sorted, 95),
    p99: percentile(sorted, 99),
    min: sorted[0] as number,
    max: sorted[sorted.length - 1] as number,
  };
}

export function judge(s: Summary, target: Target | undefined): Figure['verdict'] {
  if (!target) return 'no target';
  const v = s[target.on];
  switch (target.op) {
    case '<':
      return v < target.value ? 'met' : 'missed';
    case '>':
      return v > target.value ? 'met' : 'missed';
    case '=':
      return s.min === target.value && s.max === target.value ? 'met' : 'missed';
  }
}

export interface FigureInput {
  id: string;
  bench: string;
  title: string;
  unit: string;
  fleetSize: number;
  samples: readonly number[];
  target?: Target;
  floor?: { what: string; samples: readonly number[] };
  notes?: string;
  command: string;
}

/** Builds a figure from raw samples: summary, verdict against the target, ratio to the floor. */
export function figure(input: FigureInput): Figure {
  const s = summarize(input.samples);
  const out: Figure = {
    id: input.id,
    bench: input.bench,
    title: input.title,
    unit: input.unit,
    fleetSize: input.fleetSize,
    ...s,
    verdict: judge(s, input.target),
    command: input.command,
  };
  if (input.target) out.target = input.target;
  if (input.floor && input.floor.samples.length > 0) {
    const floorMedian = summarize(input.floor.samples).median;
    out.floor = {
      what: input.floor.what,
      median: floorMedian,
      ratio: floorMedian > 0 ? s.median / floorMedian : Number.POSITIVE_INFINITY,
    };
  }
  if (input.notes) out.notes = input.notes;
  return out;
}

/** The statistic a figure's target judges (figures written before p95 existed fall back to p99). */
export function targetValue(f: Figure): number {
  switch (f.target?.on) {
    case 'median':
      return f.median;
    case 'max':
      return f.max;
    case 'p95':
      return f.p95 ?? f.p99;
    case 'p99':
    case undefined:
      return f.p99;
  }
}

/** Figures that compare sizes: is the cost per idle cluster flat as the fleet grows? */
export function flatness(
  figures: Figure[],
  prefix: string,
  bench: string,
  what: string,
  command: string,
): Figure | undefined {
  const sized = figures.filter((f) => f.id.startsWith(prefix)).sort((a, b) => a.fleetSize - b.fleetSize);
  // The smallest size is dominated by fixed costs; compare the two largest.
  if (sized.length < 2) return undefined;
  const a = sized[sized.length - 2] as Figure;
  const b = sized[sized.length - 1] as Figure;
  // Nothing at both sizes is flat; something after nothing is not.
  const ratio = a.median > 0 ? b.median / a.median : b.median > 0 ? Number.POSITIVE_INFINITY : 1;
  return {
    id: `${prefix.replace(/\.$/, '')}-flatness`,
    bench,
    title: `${what}: per-cluster cost at ${b.fleetSize} ÷ at ${a.fleetSize} clusters`,
    unit: 'ratio',
    fleetSize: b.fleetSize,
    runs: Math.min(a.runs, b.runs),
    median: ratio,
    p99: ratio,
    min: ratio,
    max: ratio,
    target: {
      on: 'median',
      op: '<',
      value: 1.5,
      text: `flat: < 1.5× as the fleet grows ${Number((b.fleetSize / a.fleetSize).toFixed(1))}×`,
    },
    verdict: ratio < 1.5 ? 'met' : 'missed',
    notes: `medians ${a.median.toFixed(1)} and ${b.median.toFixed(1)} ${a.unit}`,
    command,
  };
}
