import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { HubLogger } from './hub-logger.js';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const l of chunk.toString('utf8').split('\n').filter(Boolean))
        lines.push(JSON.parse(l) as Record<string, unknown>);
      done();
    },
  });
  return { lines, logger: new HubLogger({ level: 'trace', stream }) };
}

describe('HubLogger reads Nest logger calls as Nest does', () => {
  it('takes a trailing string as the context and pino levels by name', () => {
    const { lines, logger } = capture();
    logger.log('started', 'Database');
    logger.warn('slow', 'GitMirrors');
    logger.verbose('detail');
    expect(lines.map((l) => [l['level'], l['context'], l['msg']])).toEqual([
      [30, 'Database', 'started'],
      [40, 'GitMirrors', 'slow'],
      [10, undefined, 'detail'],
    ]);
  });

  it('takes error(message, stack, context), logs Error objects with their stack, merges objects', () => {
    const { lines, logger } = capture();
    logger.error('boom', 'Error: boom\n    at x', 'RenderService');
    logger.error(new Error('bad thing'));
    logger.error('no stack', undefined, 'Audit');
    logger.log({ repository: 'fleet', revision: 'abc' }, 'Git');
    expect(lines[0]).toMatchObject({
      level: 50,
      msg: 'boom',
      stack: 'Error: boom\n    at x',
      context: 'RenderService',
    });
    expect(lines[1]).toMatchObject({ level: 50, msg: 'bad thing', err: { message: 'bad thing' } });
    expect(String((lines[1]!['err'] as { stack: string }).stack)).toContain('bad thing');
    expect(lines[2]).toEqual(expect.objectContaining({ level: 50, msg: 'no stack', context: 'Audit' }));
    expect(lines[2]).not.toHaveProperty('params');
    expect(lines[3]).toMatchObject({ level: 30, repository: 'fleet', revision: 'abc', context: 'Git' });
  });
});
