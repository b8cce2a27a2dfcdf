import { describe, expect, it } from 'vitest';
import { QUEUE_NAMES } from '@flotilla/contract';
import { checkQueueHandlers } from './queue-handlers.js';

describe('checkQueueHandlers', () => {
  const all = QUEUE_NAMES.map((queue) => ({ queue, name: `${queue}-handler` }));

  it('passes with exactly one handler per queue', () => {
    expect(() => checkQueueHandlers(all)).not.toThrow();
  });

  it('names a queue with no handler and one with two', () => {
    const wrong = [
      ...all.filter((h) => h.queue !== 'appset-expand'),
      { queue: 'rollout' as const, name: 'second' },
    ];
    expect(() => checkQueueHandlers(wrong)).toThrow(
      'queue "appset-expand" has no handler; queue "rollout" has 2 handlers: rollout-handler, second',
    );
  });
});
