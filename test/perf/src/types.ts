/** What one benchmark measured, as it is written to docs/benchmarks.json and the tables. */
export interface Figure {
  /** Stable id, e.g. `agent.drift-to-heal`. */
  id: string;
  /** The benchmark group (`sim`, `agent`, `diff`, `desired`, `fleet`). */
  bench: string;
  title: string;
  unit: string;
  /** Simulated clusters involved (0 where no cluster is involved). */
  fleetSize: number;
  runs: number;
  median: number;
  /** Absent in figures written before it was recorded. */
  p95?: number;
  p99: number;
  min: number;
  max: number;
  /** The target, when the design sets one; `verdict` says plainly whether it held. */
  target?: Target;
  verdict: 'met' | 'missed' | 'no target';
  /** The physical floor measured in the same run, and this figure's median over the floor's. */
  floor?: { what: string; median: number; ratio: number };
  notes?: string;
  /** The command that reproduces this figure. */
  command: string;
}

export interface Target {
  /** Which statistic is judged. */
  on: 'median' | 'p95' | 'p99' | 'max';
  op: '<' | '>' | '=';
  value: number;
  /** The target as a person states it, e.g. `p99 < 1 s`. */
  text: string;
}

/** A chart series: one y value per fleet size. */
export interface Series {
  chart: string;
  name: string;
  unit: string;
  points: { x: number; y: number }[];
}

export interface BenchOutput {
  figures: Figure[];
  series: Series[];
  /** Things the reader must know (a stand-in used, a size skipped and why). */
  remarks: string[];
}

export interface BenchContext {
  quick: boolean;
  /** Per-bench parameters chosen by the runner (e.g. the fleet size of a sim-idle child). */
  params: Record<string, number>;
  progress: (line: string) => void;
}

export type BenchFn = (ctx: BenchContext) => Promise<BenchOutput>;
