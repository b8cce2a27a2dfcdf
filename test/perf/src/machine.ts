import { readFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';

export interface Machine {
  cpuModel: string;
  cores: number;
  memoryGiB: number;
  node: string;
  /** One-minute load average when the run started: a busy machine inflates every figure. */
  loadAverage: number;
}

export function describeMachine(): Machine {
  let cpuModel = cpus()[0]?.model ?? 'unknown';
  try {
    const line = readFileSync('/proc/cpuinfo', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('model name'));
    if (line) cpuModel = line.slice(line.indexOf(':') + 1).trim();
  } catch {
    // Not Linux: os.cpus() named the model already.
  }
  return {
    cpuModel,
    cores: cpus().length,
    memoryGiB: Math.round((totalmem() / 1024 ** 3) * 10) / 10,
    node: process.version,
    loadAverage: Math.round((loadavg()[0] ?? 0) * 100) / 100,
  };
}
