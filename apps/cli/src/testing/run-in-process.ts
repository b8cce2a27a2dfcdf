import { vi } from 'vitest';

export interface CommandOutcome {
  code: number;
  out: string;
  err: string;
}

/**
 * Runs a command's `run` in this process and captures what it prints: stdout as written, and
 * `console.error` lines as stderr. The real command code runs; only the terminal is captured.
 */
export async function runInProcess(
  run: (argv: string[]) => Promise<number>,
  argv: string[],
): Promise<CommandOutcome> {
  let out = '';
  let err = '';
  const write = vi.spyOn(process.stdout, 'write').mockImplementation((chunk: string | Uint8Array) => {
    out += String(chunk);
    return true;
  });
  const error = vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => {
    err += `${args.join(' ')}\n`;
  });
  try {
    return { code: await run(argv), out, err };
  } finally {
    write.mockRestore();
    error.mockRestore();
  }
}
