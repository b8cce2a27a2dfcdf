import { describe, expect, it } from 'vitest';
import { watch } from './watch.js';

/** A render that answers `answers` in turn (the last one forever), counting its calls. */
function answering(...answers: string[]): { render: () => Promise<string>; calls: () => number } {
  let calls = 0;
  return {
    render: () => Promise.resolve(answers[Math.min(calls++, answers.length - 1)]!),
    calls: () => calls,
  };
}

describe('watch', () => {
  it('prints the first answer, then only the changed ones, a table after a blank line', async () => {
    const out: string[] = [];
    const { render, calls } = answering('A\n', 'A\n', 'B\n', 'B\n', 'A\n');
    await watch('table', render, { intervalMs: 1, timeoutMs: 300, write: (t) => out.push(t) });
    expect(out).toEqual(['A\n', '\nB\n', '\nA\n']);
    expect(calls()).toBeGreaterThan(5);
  });

  it('keeps -o json one document per line and separates YAML documents', async () => {
    const json: string[] = [];
    await watch('json', answering('[1]\n', '[2]\n').render, {
      intervalMs: 1,
      timeoutMs: 100,
      write: (t) => json.push(t),
    });
    expect(json.join('')).toBe('[1]\n[2]\n');
    const yaml: string[] = [];
    await watch('yaml', answering('- 1\n', '- 2\n').render, {
      intervalMs: 1,
      timeoutMs: 100,
      write: (t) => yaml.push(t),
    });
    expect(yaml.join('')).toBe('- 1\n---\n- 2\n');
  });

  it('stops when told, between polls or during one, without another answer', async () => {
    const stop = new AbortController();
    const out: string[] = [];
    let calls = 0;
    const render = (): Promise<string> => {
      calls++;
      // The second poll never answers: stopping must not wait for it.
      if (calls === 2) {
        setTimeout(() => stop.abort(), 20);
        return new Promise(() => undefined);
      }
      return Promise.resolve(`${calls}\n`);
    };
    await watch('table', render, { intervalMs: 1, signal: stop.signal, write: (t) => out.push(t) });
    expect(out).toEqual(['1\n']);
    expect(calls).toBe(2);
  });

  it('passes a failed poll on to the command (exit 1 with the hub named)', async () => {
    const render = (): Promise<string> => Promise.reject(new Error('cannot reach the hub'));
    await expect(watch('table', render, { intervalMs: 1, timeoutMs: 1000 })).rejects.toThrow(
      'cannot reach the hub',
    );
  });
});
