import { describe, expect, it } from 'vitest';
import { runTool, ToolError } from './tool-process.js';

// The limits every render tool (helm, kustomize) runs under, on real child processes.

const run = (script: string, limits: { timeoutMs?: number; maxOutputBytes?: number } = {}) =>
  runTool({
    tool: 'helm',
    command: '/bin/sh',
    args: ['-c', script],
    cwd: '/',
    env: { PATH: '/usr/bin:/bin' },
    timeoutMs: limits.timeoutMs ?? 60_000,
    maxOutputBytes: limits.maxOutputBytes ?? 1024 * 1024,
  });

async function failure(p: Promise<string>): Promise<ToolError> {
  try {
    await p;
  } catch (e) {
    if (e instanceof ToolError) return e;
    throw e;
  }
  throw new Error('the tool succeeded');
}

describe('runTool', () => {
  it('kills a tool that runs past its timeout and says so', async () => {
    const e = await failure(run('sleep 30', { timeoutMs: 200 }));
    expect(e.code).toBe('timeout');
    expect(e.message).toBe('helm did not finish within 200 ms');
  });

  it('kills a tool whose output passes the cap', async () => {
    const e = await failure(run('yes flotilla', { maxOutputBytes: 64 * 1024 }));
    expect(e.code).toBe('output-too-large');
    expect(e.message).toBe(`helm wrote more than ${64 * 1024} bytes`);
  });

  it("fails with the tool's stderr and exit code", async () => {
    const e = await failure(run('echo "Error: chart not found" >&2; exit 3'));
    expect(e.code).toBe('failed');
    expect(e.stderr).toBe('Error: chart not found');
    expect(e.message).toBe('helm failed (exit 3): Error: chart not found');
  });

  it('a timeout is reported even while something the tool started holds its output open', async () => {
    const e = await failure(run('sleep 30 & echo $! ; wait', { timeoutMs: 300 }));
    expect(e.code).toBe('timeout');
  });

  it('gives the child only the environment it is handed', async () => {
    expect(await run('echo "${HOME:-none} $PATH"')).toBe('none /usr/bin:/bin\n');
  });
});
