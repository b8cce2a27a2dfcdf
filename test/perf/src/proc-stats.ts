import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

let ticksPerSecond: number | undefined;
function clockTicks(): number {
  if (ticksPerSecond === undefined) {
    try {
      ticksPerSecond = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticksPerSecond = 100;
    }
  }
  return ticksPerSecond;
}

export interface ProcMemory {
  /** Resident set size now, MB (10^6 bytes, as the targets are stated). */
  rssMB: number;
  /** Peak resident set size, MB. */
  peakMB: number;
}

/** Memory of any process by PID, from /proc (Linux), as `ps` and the kernel see it. */
export function procMemory(pid: number): ProcMemory {
  const kib = kibFieldsOf(`/proc/${pid}/status`);
  return { rssMB: (kib('VmRSS') * 1024) / 1e6, peakMB: (kib('VmHWM') * 1024) / 1e6 };
}

/** A reader of the `Key:   1234 kB` lines of a /proc file (0 for a key it lacks). */
function kibFieldsOf(path: string): (key: string) => number {
  const text = readFileSync(path, 'utf8');
  return (key) => {
    const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(text);
    return m ? Number(m[1]) : 0;
  };
}

/** CPU seconds (user + system) a process has used so far. */
export function procCpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // Fields after the command name (which may contain spaces) start at state, field 3.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / clockTicks();
}

export interface IdleSample {
  /** CPU used over the window, as a percentage of one core. */
  cpuPercent: number;
  rssMB: number;
}

/**
 * Samples a process over `windowMs` in `slices` equal slices: one CPU percentage and one RSS per
 * slice, so the summary has a median and a p99 rather than a single number.
 */
export async function sampleIdle(pid: number, windowMs: number, slices: number): Promise<IdleSample[]> {
  const out: IdleSample[] = [];
  const slice = windowMs / slices;
  for (let i = 0; i < slices; i++) {
    const cpu0 = procCpuSeconds(pid);
    const t0 = performance.now();
    await new Promise((resolve) => setTimeout(resolve, slice));
    const elapsed = (performance.now() - t0) / 1000;
    out.push({ cpuPercent: ((procCpuSeconds(pid) - cpu0) / elapsed) * 100, rssMB: procMemory(pid).rssMB });
  }
  return out;
}

export interface ProcMemoryParts {
  /** Pages only this process has written: its heap, V8's heap and code, stacks. MB. */
  privateMB: number;
  /** File pages shared with any process mapping the same file (the node binary, libc). MB. */
  sharedFileMB: number;
  /** Proportional set size: private plus its share of the shared pages. MB. */
  pssMB: number;
}

/** What the resident set is made of, from /proc/PID/smaps_rollup (Linux 4.14+). */
export function procMemoryParts(pid: number): ProcMemoryParts {
  const kib = kibFieldsOf(`/proc/${pid}/smaps_rollup`);
  const mb = (k: number): number => (k * 1024) / 1e6;
  return {
    privateMB: mb(kib('Private_Dirty') + kib('Private_Clean')),
    sharedFileMB: mb(kib('Shared_Clean') + kib('Shared_Dirty')),
    pssMB: mb(kib('Pss')),
  };
}
