import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import semver from 'semver';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '@flotilla/cli/fleet';

interface LockedPackage {
  version?: string;
  dev?: boolean;
  devOptional?: boolean;
  link?: boolean;
  engines?: { node?: string } | string[];
}

const read = (path: string) => readFileSync(join(REPO_ROOT, path), 'utf8');
const declared: string = (JSON.parse(read('package.json')) as { engines: { node: string } }).engines.node;
/** The oldest release of each Node line the project declares (">=20.19 <21 || >=22.12" gives two). */
const oldestSupported = declared.split('||').map((range) => semver.minVersion(range.trim())!.version);

/**
 * `engines` is a promise to people installing Flotilla: every package the hub, agent or CLI loads at
 * run time (not a dev tool) must support the oldest release of every Node line we declare, and the
 * images must run a Node we declare. (nestjs-pino 5 and file-type 22 once broke this quietly.)
 */
describe('Node versions agree', () => {
  it('every runtime dependency supports each Node line in engines', () => {
    const lock = JSON.parse(read('package-lock.json')) as { packages: Record<string, LockedPackage> };
    const misfits: string[] = [];
    for (const [path, pkg] of Object.entries(lock.packages)) {
      if (path === '' || pkg.dev || pkg.devOptional || pkg.link) continue;
      const wants = !Array.isArray(pkg.engines) ? pkg.engines?.node : undefined;
      if (!wants) continue;
      for (const node of oldestSupported)
        if (!semver.satisfies(node, wants))
          misfits.push(`${path}@${pkg.version} wants node ${wants}, not ${node}`);
    }
    expect(oldestSupported.length).toBeGreaterThan(0);
    expect(misfits).toEqual([]);
  });

  it('the images run a Node the project declares', () => {
    const dockerfile = read('deploy/docker/Dockerfile');
    // Base images come from FROM lines and ARG defaults (ARG NODE_IMAGE=node:22-bookworm-slim).
    const tags = [...dockerfile.matchAll(/(?:^FROM\s+|^ARG\s+\w+=)node:(\d+(?:\.\d+){0,2})\b/gm)].map(
      (m) => m[1]!,
    );
    expect(tags.length).toBeGreaterThan(0);
    for (const tag of tags) {
      // A floating tag (22, 22.21) is the newest release of that line: it must fall inside engines.
      const parts = tag.split('.').length;
      const line = parts === 3 ? tag : `${tag}.x`;
      const newest = semver.maxSatisfying([semver.coerce(tag)!.version, `${tag.split('.')[0]}.99.99`], line);
      expect(newest && semver.satisfies(parts === 3 ? tag : newest, declared), `node:${tag}`).toBe(true);
    }
  });
});
