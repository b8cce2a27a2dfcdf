import { describe, expect, it } from 'vitest';
import { type HealthRule } from '@flotilla/contract';
import { RuledHealthAssessor } from './health-rules.js';

const widget = { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } };
const rule = (status: string, file = 'a/health.lua'): HealthRule => ({
  key: 'example.com/Widget',
  script: `return { status = "${status}", message = "by rule" }`,
  source: { origin: 'hub', file },
});

describe('RuledHealthAssessor', () => {
  it('judges with the latest rules; the same rules (from another file) build nothing new', async () => {
    const assessor = await RuledHealthAssessor.create();
    try {
      expect(assessor.assess(widget)).toBeNull();
      expect(await assessor.setRules([rule('Progressing')])).toBe(true);
      expect(assessor.assess(widget)).toEqual({ status: 'Progressing', message: 'by rule' });
      expect(await assessor.setRules([rule('Progressing', 'moved/health.lua')])).toBe(false);
      expect(await assessor.setRules([rule('Healthy')])).toBe(true);
      expect(assessor.assess(widget)).toEqual({ status: 'Healthy', message: 'by rule' });
      expect(assessor.ruleCount).toBe(1);
      // Back to none: the kind has no health again, built-in kinds keep theirs.
      expect(await assessor.setRules([])).toBe(true);
      expect(assessor.assess(widget)).toBeNull();
      expect(assessor.assess({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'n' } })).toEqual({
        status: 'Healthy',
        message: '',
      });
    } finally {
      assessor.close();
    }
  });

  it('a rule that fails judges Unknown with the error, naming the rule', async () => {
    const assessor = await RuledHealthAssessor.create([
      { ...rule('Healthy'), script: 'return { status = obj.status.phase }' },
    ]);
    try {
      expect(assessor.assess(widget)).toEqual({
        status: 'Unknown',
        message: expect.stringContaining('example.com/Widget/health.lua:1:') as unknown,
      });
    } finally {
      assessor.close();
    }
  });
});
