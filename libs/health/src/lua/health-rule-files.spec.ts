import { readdirSync, readFileSync } from 'node:fs';
import { join, sep } from 'node:path';
import { describe, expect, it } from 'vitest';
import { checkHealthRules, HEALTH_RULE_MAX_BYTES, healthRuleKeyOf } from './health-rule-files.js';

const root = join(import.meta.dirname, '../testdata/lua');
/** Every health.lua of the fixture directory (Argo CD's layout, tests beside the scripts). */
const fixtureFiles = readdirSync(root, { recursive: true, encoding: 'utf8' })
  .filter((p) => p.endsWith('health.lua'))
  .map((p) => {
    const relativePath = p.split(sep).join('/');
    return { file: `rules/${relativePath}`, relativePath, content: readFileSync(join(root, p), 'utf8') };
  });

const rule = (relativePath: string, content = 'return { status = "Healthy" }') => ({
  file: `rules/${relativePath}`,
  relativePath,
  content,
});

describe('health rule files', () => {
  it('keys the two layouts Argo CD reads, wildcards included', () => {
    expect(healthRuleKeyOf('cert-manager.io/Certificate/health.lua')).toEqual({
      key: 'cert-manager.io/Certificate',
    });
    expect(healthRuleKeyOf('_.crossplane.io/_/health.lua')).toEqual({ key: '_.crossplane.io/_' });
    expect(healthRuleKeyOf('Service/health.lua')).toEqual({ key: 'Service' });
  });

  it('accepts the fixture library (a script that fails at run time still compiles)', async () => {
    const { rules, problems } = await checkHealthRules(fixtureFiles);
    expect(problems).toEqual([]);
    expect(rules.map((r) => r.key)).toContain('cert-manager.io/Certificate');
    expect(rules.map((r) => r.key)).toContain('broken.example.org/Broken');
    expect(rules.map((r) => r.key)).toEqual([...rules.map((r) => r.key)].sort());
  });

  it('refuses a script that does not compile, naming its file and line, and keeps the rest', async () => {
    const { rules, problems } = await checkHealthRules([
      rule('example.com/Good/health.lua'),
      rule('example.com/Bad/health.lua', 'local hs = {\nhs.status = "Healthy"\nreturn hs\n'),
    ]);
    expect(rules.map((r) => r.key)).toEqual(['example.com/Good']);
    expect(problems).toEqual([
      {
        code: 'invalid-lua',
        file: 'rules/example.com/Bad/health.lua',
        line: 2,
        message: "'}' expected (to close '{' at line 1) near '='",
      },
    ]);
  });

  it('refuses files that are not at a rule’s place: too deep, not a group, not a kind', async () => {
    const { rules, problems } = await checkHealthRules([
      rule('example.com/Thing/extra/health.lua'),
      rule('Example.COM/Thing/health.lua'),
      rule('example.com/Thing-v2/health.lua'),
      rule('health.lua'),
    ]);
    expect(rules).toEqual([]);
    expect(problems.map((p) => [p.code, p.file])).toEqual([
      ['invalid-path', 'rules/example.com/Thing/extra/health.lua'],
      ['invalid-path', 'rules/Example.COM/Thing/health.lua'],
      ['invalid-path', 'rules/example.com/Thing-v2/health.lua'],
      ['invalid-path', 'rules/health.lua'],
    ]);
    expect(problems[1]?.message).toContain("'Example.COM' is not an API group");
    expect(problems[2]?.message).toContain("'Thing-v2' is not a kind");
  });

  it('refuses a script over the size cap', async () => {
    const big = `-- ${'x'.repeat(HEALTH_RULE_MAX_BYTES)}\nreturn { status = "Healthy" }`;
    const { rules, problems } = await checkHealthRules([rule('example.com/Big/health.lua', big)]);
    expect(rules).toEqual([]);
    expect(problems).toEqual([
      {
        code: 'too-large',
        file: 'rules/example.com/Big/health.lua',
        message: `${new TextEncoder().encode(big).length} bytes; a health script may hold at most ${HEALTH_RULE_MAX_BYTES}`,
      },
    ]);
  });
});
