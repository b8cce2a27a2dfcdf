import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { simpleGit, type SimpleGit } from 'simple-git';
import { stringify } from 'yaml';
import { configMap, deployment, namespace, service, type KubeObject } from './sim-objects.js';

export interface AppShape {
  apps: number;
  deployments: number;
  services: number;
  configMaps: number;
}

/** Objects per app: its namespace plus the shape's Deployments, Services and ConfigMaps. */
export function objectsPerApp(shape: AppShape): number {
  return 1 + shape.deployments + shape.services + shape.configMaps;
}

export function appName(i: number): string {
  return `app-${String(i).padStart(3, '0')}`;
}

/** The manifests of one app at a release; `release` lands in every ConfigMap's `data.release`. */
export function appObjects(i: number, shape: AppShape, release: string): KubeObject[] {
  const ns = appName(i);
  const out: KubeObject[] = [namespace(ns)];
  for (let d = 0; d < shape.deployments; d++)
    out.push(deployment(`web-${d}`, ns, 'ghcr.io/example/web:1.0.0'));
  for (let s = 0; s < shape.services; s++) out.push(service(`web-${s}`, ns));
  for (let c = 0; c < shape.configMaps; c++)
    out.push(configMap(`settings-${c}`, ns, { release, tier: 'standard', index: String(c) }));
  return out;
}

/** A Git working tree with `apps/<app>/manifests.yaml` per app, committed on branch main. */
export class AppRepo {
  private constructor(
    readonly dir: string,
    readonly git: SimpleGit,
    readonly shape: AppShape,
  ) {}

  static async create(dir: string, shape: AppShape): Promise<AppRepo> {
    mkdirSync(dir, { recursive: true });
    const git = simpleGit(dir);
    await git.init(['--initial-branch=main']);
    await git.addConfig('user.name', 'Flotilla bench').addConfig('user.email', 'bench@flotilla.local');
    const repo = new AppRepo(dir, git, shape);
    await repo.commitRelease('r0');
    return repo;
  }

  /** Writes every app at `release` and commits; returns the commit sha. */
  async commitRelease(release: string): Promise<string> {
    rmSync(join(this.dir, 'apps'), { recursive: true, force: true });
    for (let i = 0; i < this.shape.apps; i++) {
      const appDir = join(this.dir, 'apps', appName(i));
      mkdirSync(appDir, { recursive: true });
      const docs = appObjects(i, this.shape, release).map((o) => stringify(o));
      writeFileSync(join(appDir, 'manifests.yaml'), docs.join('---\n'));
    }
    await this.git.add('.');
    await this.git.commit(`release ${release}`);
    return (await this.git.revparse(['HEAD'])).trim();
  }
}

/** An appset that puts every app directory on every registered cluster (clusters × git directories). */
export function fleetAppSet(name: string, repoUrl: string): unknown {
  return {
    apiVersion: 'flotilla.dev/v1alpha1',
    kind: 'ApplicationSet',
    metadata: { name },
    spec: {
      generators: [
        {
          matrix: {
            generators: [
              { clusters: {} },
              { git: { repoURL: repoUrl, revision: 'main', directories: [{ path: 'apps/*' }] } },
            ],
          },
        },
      ],
      template: {
        metadata: { name: '{{name}}-{{path.basename}}' },
        spec: {
          source: { repoURL: repoUrl, targetRevision: 'main', path: '{{path}}' },
          destination: { name: '{{name}}', namespace: '{{path.basename}}' },
          syncPolicy: { automated: { prune: true, selfHeal: true } },
        },
      },
    },
  };
}
