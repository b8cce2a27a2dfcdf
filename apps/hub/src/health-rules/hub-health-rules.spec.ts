import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { HubConfigError } from '../config/hub-config.js';
import { loadHubHealthRules } from './hub-health-rules.js';

const dirs: string[] = [];
function rulesDir(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'flotilla-hub-rules-'));
  dirs.push(dir);
  for (const [path, content] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), content);
  }
  return dir;
}
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

const OK = 'return { status = "Healthy" }\n';

describe('FLOTILLA_HEALTH_LUA_DIR', () => {
  it('reads health.lua in Argo CD’s layout, skipping actions, test data and hidden entries', async () => {
    const dir = rulesDir({
      'cert-manager.io/Certificate/health.lua': OK,
      'cert-manager.io/Certificate/health_test.yaml': 'tests: []\n',
      'cert-manager.io/Certificate/actions/renew/action.lua': 'return obj',
      'Service/health.lua': OK,
      '..data/example.com/Hidden/health.lua': 'not lua at all (',
    });
    const rules = await loadHubHealthRules(dir);
    expect(rules.map((r) => [r.key, r.file])).toEqual([
      ['Service', join(dir, 'Service/health.lua')],
      ['cert-manager.io/Certificate', join(dir, 'cert-manager.io/Certificate/health.lua')],
    ]);
  });

  it('refuses to start on a script that does not compile or a misplaced one, naming each file', async () => {
    const dir = rulesDir({
      'cert-manager.io/Certificate/health.lua': OK,
      'example.com/Widget/health.lua': 'local hs = {\nreturn hs\n',
      'example.com/Widget/v1/health.lua': OK,
    });
    const error = await loadHubHealthRules(dir).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HubConfigError);
    expect((error as HubConfigError).issues).toEqual([
      {
        variable: 'FLOTILLA_HEALTH_LUA_DIR',
        message: `${join(dir, 'example.com/Widget/v1/health.lua')}: 'example.com/Widget/v1/health.lua' is not a health rule's place: expected <group>/<kind>/health.lua (or <Kind>/health.lua for a core kind)`,
      },
      {
        variable: 'FLOTILLA_HEALTH_LUA_DIR',
        message: `${join(dir, 'example.com/Widget/health.lua')}:2: unexpected symbol near 'return'`,
      },
    ]);
  });

  it('refuses a directory it cannot read', async () => {
    await expect(loadHubHealthRules('/nonexistent/rules')).rejects.toThrow(
      'FLOTILLA_HEALTH_LUA_DIR: cannot read /nonexistent/rules: ENOENT',
    );
  });
});
