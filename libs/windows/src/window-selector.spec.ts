import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { validateWindows } from './validate-windows.js';
import { windowMatches, type WindowTarget } from './window-selector.js';

interface Case {
  name: string;
  window: Record<string, unknown>;
  target?: Partial<WindowTarget>;
  matches: boolean;
}

const cases = parse(readFileSync(new URL('./testdata/selectors.yaml', import.meta.url), 'utf8')) as Case[];
// Argo CD's newTestApp(): test-app in namespace default on cluster clusterName.
const app: WindowTarget = { application: 'test-app', namespace: 'default', cluster: 'clusterName' };

describe('windowMatches', () => {
  for (const c of cases) {
    it(c.name, () => {
      const [window] = validateWindows([
        { kind: 'allow', schedule: '* * * * *', duration: '1h', ...c.window },
      ]);
      expect(windowMatches(window as NonNullable<typeof window>, { ...app, ...c.target })).toBe(c.matches);
    });
  }
});
