// Renders a kustomization (or a directory given kustomize options) with kustomize, in a temporary checkout.
import { writeFile, mkdir } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { Inject, Injectable } from '@nestjs/common';
import {
  checkKustomizationTree,
  checkTreeEntries,
  DEFAULT_PARSE_LIMITS,
  hasKustomizeOverrides,
  isManifestPath,
  kustomizationFileIn,
  overlayKustomization,
  symlinksOf,
  type KustomizeOptions,
  type TreeEntry,
} from '@flotilla/manifests';
import { KustomizeError } from '@flotilla/manifests/node';
import { HUB_CONFIG, type HubConfig } from '../config/hub-config.js';
import { GitMirrorsService } from '../sources/git/git-mirrors.service.js';
import {
  checkCheckoutSize,
  checkOutInto,
  inRenderWorkspace,
  MAX_CHECKOUT_BYTES,
} from './render-checkouts.js';
import { readGit, RenderError, translateManifestError } from './render-error.js';
import type { Rendered, RenderSource } from './render-source.js';
import { RenderTools } from './render-tools.service.js';
import { parseRendered } from './rendered-objects.js';

/**
 * `kustomize build` of a directory at a commit. What the kustomizations may reach is checked from the
 * mirror before anything is checked out; the per-target options are applied by a generated overlay.
 */
@Injectable()
export class KustomizeRenderer {
  constructor(
    private readonly mirrors: GitMirrorsService,
    private readonly tools: RenderTools,
    @Inject(HUB_CONFIG) private readonly config: HubConfig,
  ) {}

  async render(
    src: Pick<RenderSource, 'repositoryId' | 'revision'>,
    dir: string,
    options: KustomizeOptions,
    entries: TreeEntry[],
    where: string,
  ): Promise<Rendered> {
    this.checkReach(src, dir, entries, where);
    return inRenderWorkspace(async (work) => {
      const root = await checkOutInto(this.mirrors.mirrors, work, 'repo', src, where);
      let buildDir = join(root, dir);
      if (hasKustomizeOverrides(options)) {
        buildDir = await writeOverlay(root, dir, options, entries, where);
      }
      const output = await this.build(buildDir, root, dir, where);
      return parseRendered(
        [{ path: 'kustomize-build-output.yaml', content: output }],
        where,
        undefined,
        `the kustomize output of ${dir || '.'}`,
      );
    });
  }

  /**
   * The kustomizations `dir` reaches stay in the repository (remote bases only when allowed), the
   * whole checkout has no symlink out of it and a bounded size, and what they can read is within the
   * per-file limit.
   */
  private checkReach(
    src: Pick<RenderSource, 'repositoryId' | 'revision'>,
    dir: string,
    entries: TreeEntry[],
    where: string,
  ): void {
    const repoPaths = new Set<string>();
    for (const e of entries) {
      repoPaths.add(e.path);
      for (let d = posix.dirname(e.path); d !== '.'; d = posix.dirname(d)) repoPaths.add(d);
    }
    const read = (path: string) =>
      readGit(where, () => this.mirrors.mirrors.readFile(src.repositoryId, src.revision, path));
    const links = symlinksOf(entries);
    const reached = translateManifestError(where, () =>
      checkKustomizationTree(dir, repoPaths, read, this.config.render.allowRemoteBases, links),
    );
    const inReach = (path: string) => reached.some((d) => d === '' || path.startsWith(`${d}/`));
    checkCheckoutSize(entries, where);
    translateManifestError(where, () =>
      checkTreeEntries(
        entries.filter((e) => inReach(e.path)),
        { maxFileBytes: DEFAULT_PARSE_LIMITS.maxFileBytes, maxTreeBytes: MAX_CHECKOUT_BYTES },
        links,
      ),
    );
  }

  /** `kustomize build`; its errors name files as the repository does, not by the checkout's path. */
  private async build(buildDir: string, root: string, dir: string, where: string): Promise<string> {
    try {
      return await this.tools.kustomize.build(buildDir);
    } catch (e) {
      if (e instanceof KustomizeError) {
        const stderr = oneParagraph(e.stderr.replaceAll(`${root}/`, ''));
        throw new RenderError(
          e.code,
          `kustomize build of ${dir || '.'} failed: ${stderr || e.message}`,
          where,
        );
      }
      throw e;
    }
  }
}

/**
 * Writes the generated overlay that applies the per-target options: beside the repository for a
 * committed kustomization (it names that directory as its one resource), or as the kustomization of
 * a plain directory (listing its manifest files), as Argo CD does for a directory without one.
 */
async function writeOverlay(
  root: string,
  dir: string,
  options: KustomizeOptions,
  entries: TreeEntry[],
  where: string,
): Promise<string> {
  const files = entries.filter((e) => dir === '' || e.path.startsWith(`${dir}/`)).map((e) => e.path);
  if (kustomizationFileIn(files, dir)) {
    const overlay = join(root, '.flotilla-overlay');
    await mkdir(overlay);
    await writeFile(
      join(overlay, 'kustomization.yaml'),
      overlayKustomization([posix.join('..', dir || '.')], options),
    );
    return overlay;
  }
  const manifests = files
    .filter((f) => isManifestPath(dir ? f.slice(dir.length + 1) : f))
    .map((f) => (dir ? f.slice(dir.length + 1) : f))
    .sort();
  if (manifests.length === 0) {
    throw new RenderError('no-manifests', `path "${dir || '.'}" holds no YAML or JSON manifests`, where);
  }
  await writeFile(join(root, dir, 'kustomization.yaml'), overlayKustomization(manifests, options));
  return join(root, dir);
}

function oneParagraph(text: string): string {
  return text.trim().split('\n').slice(0, 20).join('\n');
}
