// Renders Helm charts, from a Git repository or from a Helm repository, with the real `helm template`.
import { Injectable } from '@nestjs/common';
import { ManifestError, type Capabilities, type HelmOptions, type TreeEntry } from '@flotilla/manifests';
import { GitMirrorsService } from '../sources/git/git-mirrors.service.js';
import { checkCheckoutSize, checkOutInto, inRenderWorkspace } from './render-checkouts.js';
import type { RenderApplication, Rendered, RenderSource } from './render-source.js';
import { RenderTools } from './render-tools.service.js';

/** Both kinds of chart go through the same code as `flotilla render` (renderApplication). */
@Injectable()
export class ChartRenderer {
  constructor(
    private readonly mirrors: GitMirrorsService,
    private readonly tools: RenderTools,
  ) {}

  /**
   * Renders a chart of the repository, in a temporary checkout of the commit: value files and file
   * parameters are read from it and may not leave it, and no symlink in it may point outside.
   */
  async renderFromGit(
    src: Pick<RenderSource, 'repositoryId' | 'repoUrl' | 'revision'>,
    dir: string,
    helm: HelmOptions,
    application: RenderApplication,
    capabilities: Capabilities,
    entries: TreeEntry[],
    where: string,
    judging: { record: boolean },
  ): Promise<Rendered> {
    checkCheckoutSize(entries, where);
    return inRenderWorkspace(async (work) => {
      const root = await checkOutInto(this.mirrors.mirrors, work, 'repo', src, where);
      return this.tools.renderThrough(
        application,
        [
          {
            kind: 'git',
            at: 'spec.source',
            repoURL: src.repoUrl,
            targetRevision: src.revision,
            path: dir,
            helm,
          },
        ],
        capabilities,
        {
          dirOf: (repoURL, _revision, at) => {
            if (repoURL !== src.repoUrl) {
              throw new ManifestError(
                'manifest-invalid-source',
                at,
                `${repoURL} is not this source's repository`,
              );
            }
            return root;
          },
          revisionOf: () => src.revision,
        },
        [root],
        where,
        `the chart ${dir || '.'} renders no Kubernetes objects`,
        judging,
      );
    });
  }

  /**
   * Renders a chart from a Helm repository (downloaded, checked against the index's digest, unpacked);
   * value files are read from the chart package itself.
   */
  renderFromRepository(
    src: { repoUrl: string; chart: string; version: string },
    helm: HelmOptions,
    application: RenderApplication,
    capabilities: Capabilities,
    where: string,
    judging: { record: boolean },
  ): Promise<Rendered> {
    return this.tools.renderThrough(
      application,
      [
        {
          kind: 'chart',
          at: 'spec.source',
          repoURL: src.repoUrl,
          chart: src.chart,
          targetRevision: src.version,
          helm,
        },
      ],
      capabilities,
      {
        dirOf: (_url, _revision, at) => {
          throw new ManifestError(
            'manifest-invalid-source',
            at,
            'a chart from a Helm repository reads no Git repository',
          );
        },
      },
      [],
      where,
      `chart ${src.chart} ${src.version} renders no Kubernetes objects`,
      judging,
    );
  }
}
