import { describe, expect, it } from 'vitest';
import { isHealthRuleFile, validateFleetHealthRules } from './health-rules.js';
import { isFleetFile } from './validate-fleet-directory.js';

const CERTIFICATE = `local hs = { status = "Progressing", message = "Waiting for certificate" }
if obj.status ~= nil and obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    if c.type == "Ready" and c.status == "True" then hs.status = "Healthy"; hs.message = c.message end
  end
end
return hs
`;

describe('fleet repository health rules', () => {
  it('reads health.lua under resource_customizations; its Argo CD test data is not a fleet object', () => {
    const dir = 'fleet/resource_customizations/cert-manager.io/Certificate';
    expect(isHealthRuleFile(`${dir}/health.lua`)).toBe(true);
    expect(isHealthRuleFile(`${dir}/actions/renew/action.lua`)).toBe(false);
    expect(isHealthRuleFile(`fleet/.hidden/resource_customizations/x.io/X/health.lua`)).toBe(false);
    expect(isFleetFile(`${dir}/health_test.yaml`)).toBe(false);
    expect(isFleetFile(`${dir}/testdata/healthy.yaml`)).toBe(false);
    expect(isFleetFile('fleet/web.yaml')).toBe(true);
  });

  it('keys each rule by its place and refuses a broken one naming the file, line and key', async () => {
    const { rules, errors } = await validateFleetHealthRules([
      { path: 'resource_customizations/cert-manager.io/Certificate/health.lua', content: CERTIFICATE },
      { path: 'resource_customizations/example.com/Broken/health.lua', content: 'return {\n  status = \n' },
      { path: 'resource_customizations/example.com/Deep/x/health.lua', content: 'return {}' },
      { path: 'web.yaml', content: 'kind: ApplicationSet' },
    ]);
    expect(rules).toEqual([
      {
        key: 'cert-manager.io/Certificate',
        file: 'resource_customizations/cert-manager.io/Certificate/health.lua',
        script: CERTIFICATE,
      },
    ]);
    expect(errors.map((e) => [e.code, e.file, e.line, `${e.kind}/${e.name}`, e.path, e.message])).toEqual([
      [
        'invalid-lua',
        'resource_customizations/example.com/Broken/health.lua',
        3,
        'HealthRule/example.com/Broken',
        '(root)',
        'unexpected symbol near <eof>',
      ],
      [
        'invalid-path',
        'resource_customizations/example.com/Deep/x/health.lua',
        1,
        'HealthRule/null',
        '(root)',
        "'example.com/Deep/x/health.lua' is not a health rule's place: expected <group>/<kind>/health.lua (or <Kind>/health.lua for a core kind)",
      ],
    ]);
  });
});
