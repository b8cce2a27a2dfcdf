import { describe, expect, it } from 'vitest';
import { HubError } from '../common/hub-error.js';
import { resolveCount, rolloutStrategyOf } from './rollout-strategy.js';

const appSet = (rollout: unknown) => ({
  apiVersion: 'flotilla.dev/v1alpha1',
  kind: 'ApplicationSet',
  spec: { rollout },
});

describe('rolloutStrategyOf', () => {
  it('reads the RolloutStrategy spec shape written inline, durations in seconds, names defaulted', () => {
    expect(
      rolloutStrategyOf(
        appSet({
          steps: [
            {
              name: 'canary',
              selector: { matchLabels: { ring: 'canary' } },
              bakeTime: '1m30s',
              progressDeadline: '5m',
            },
            {
              selector: { matchExpressions: [{ key: 'ring', operator: 'In', values: ['main'] }] },
              maxUnavailable: '25%',
            },
          ],
        }),
      ),
    ).toEqual({
      steps: [
        {
          name: 'canary',
          selector: { matchLabels: { ring: 'canary' } },
          maxUnavailable: 1,
          bakeSeconds: 90,
          progressDeadlineSeconds: 300,
          failureBudget: 0,
        },
        {
          name: 'step-2',
          selector: { matchExpressions: [{ key: 'ring', operator: 'In', values: ['main'] }] },
          maxUnavailable: '25%',
          bakeSeconds: 0,
          progressDeadlineSeconds: 600,
          failureBudget: 0,
        },
      ],
    });
  });

  it('is null without spec.rollout (release at once)', () => {
    expect(rolloutStrategyOf({ spec: {} })).toBeNull();
  });

  it.each([
    [{ steps: [] }, 'spec.rollout.steps', 'at least one step'],
    [
      { steps: [{ selector: {}, maxUnavailable: '150%' }] },
      'spec.rollout.steps[0].maxUnavailable',
      'percentage',
    ],
    [{ steps: [{ selector: {}, bakeTime: 'soon' }] }, 'spec.rollout.steps[0].bakeTime', 'soon'],
    [
      { steps: [{ selector: { matchExpressions: [{ key: 'ring', operator: 'Near' }] } }] },
      'spec.rollout.steps[0].selector.matchExpressions[0].operator',
      'Near',
    ],
    [
      {
        steps: [
          { name: 'a', selector: {} },
          { name: 'a', selector: {} },
        ],
      },
      'spec.rollout.steps[1].name',
      'used twice',
    ],
  ])('refuses %j with a 400 naming the field', (rollout, path, words) => {
    let error: unknown;
    try {
      rolloutStrategyOf(appSet(rollout));
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(HubError);
    expect((error as HubError).status).toBe(400);
    expect((error as HubError).path).toBe(path);
    expect((error as HubError).message).toContain(words);
  });
});

describe('resolveCount', () => {
  it('rounds percentages down, with a minimum of one for maxUnavailable and none for a budget', () => {
    expect(resolveCount('25%', 10, true)).toBe(2);
    expect(resolveCount('10%', 3, true)).toBe(1);
    expect(resolveCount('10%', 3, false)).toBe(0);
    expect(resolveCount('0%', 3, true)).toBe(0);
    expect(resolveCount(5, 3, true)).toBe(3);
    expect(resolveCount(0, 3, true)).toBe(0);
  });
});
