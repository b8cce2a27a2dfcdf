import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { startProgress } from './progress.js';

type Terminal = Writable & { isTTY: boolean; columns: number; written: string };

/**
 * A stream that keeps what is written; `isTTY` says whether it stands for a terminal, which also
 * moves its cursor (as a tty.WriteStream does, here as the escape codes it would write).
 */
function terminal(isTTY: boolean): Terminal {
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      stream.written += chunk.toString();
      callback();
    },
  }) as Terminal;
  stream.isTTY = isTTY;
  stream.columns = 80;
  stream.written = '';
  if (isTTY)
    Object.assign(stream, {
      cursorTo: (x: number, done?: () => void) => stream.write(`\x1b[${x + 1}G`, done),
      moveCursor: (dx: number, dy: number, done?: () => void) =>
        stream.write(dy < 0 ? `\x1b[${-dy}A` : dy > 0 ? `\x1b[${dy}B` : '', done),
      clearLine: (_dir: number, done?: () => void) => stream.write('\x1b[2K', done),
    });
  return stream;
}

describe('the progress of a --wait', () => {
  it('shows a spinner with its text on a terminal, and ends with the outcome marked', () => {
    const stream = terminal(true);
    const progress = startProgress('waiting for the agent of web-eu-1 to sync it', 'table', stream);
    expect(progress.shown).toBe(true);
    progress.update('waiting for the agents: 1/2 targets reported');
    progress.done('2/2 targets reported', true);
    expect(stream.written).toContain('waiting for the agent of web-eu-1 to sync it');
    expect(stream.written).toContain('2/2 targets reported');
    expect(stream.written).toContain('✔');
    const failed = terminal(true);
    startProgress('waiting', 'wide', failed).done('web-eu-1: Failed', false);
    expect(failed.written).toContain('✖');
    expect(failed.written).toContain('web-eu-1: Failed');
  });

  it('writes nothing when the stream is not a terminal (a pipe, a log, a test)', () => {
    const stream = terminal(false);
    const progress = startProgress('waiting for the agent', 'table', stream);
    expect(progress.shown).toBe(false);
    progress.update('still waiting');
    progress.done('web-eu-1: Succeeded', true);
    expect(stream.written).toBe('');
  });

  it.each(['json', 'yaml'])('writes nothing with -o %s, even on a terminal', (output) => {
    const stream = terminal(true);
    const progress = startProgress('waiting for the agent', output, stream);
    expect(progress.shown).toBe(false);
    progress.update('still waiting');
    progress.done('web-eu-1: Succeeded', true);
    expect(stream.written).toBe('');
  });
});
