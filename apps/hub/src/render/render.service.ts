import { Injectable } from '@nestjs/common';
import {
  bundleDigest,
  isManifestPath,
  ManifestError,
  parseManifestFiles,
  preserveSopsKeyOrder,
} from '@flotilla/manifests';
import { Database } from '../db/database.js';
import { toJson } from '../common/json.js';
import { GitMirrorsService } from '../git/git-mirrors.service.js';
import { normalisePath } from '../git/git-mirror.js';

export class RenderError extends Error {
  override readonly name = 'RenderError';
  constructor(
    readonly code: string,
    message: string,
    /** `<repo path>/<file>:<line>` where known. */
    readonly path: string,
  ) {
    super(message);
  }
}

export interface RenderSource {
  repositoryId: string;
  repoUrl: string;
  revision: string;
  path: string;
}

/**
 * Renders (repo, commit, path) into a bundle: the manifests under path at that commit, read from the
 * bare mirror, parsed and digested. Bundles are stored once by digest and never rewritten.
 */
@Injectable()
export class RenderService {
  constructor(
    private readonly db: Database,
    private readonly mirrors: GitMirrorsService,
  ) {}

  async render(src: RenderSource): Promise<string> {
    const dir = normalisePath(src.path);
    const where = `${src.repoUrl}@${src.revision.slice(0, 12)}:${dir || '.'}`;
    const files = this.mirrors.mirrors.listFiles(src.repositoryId, src.revision, dir);
    if (files.length === 0) {
      throw new RenderError(
        'path-not-found',
        `path "${dir || '.'}" has no files at commit ${src.revision.slice(0, 12)} of ${src.repoUrl}`,
        where,
      );
    }
    const manifestFiles = files.filter(isManifestPath);
    if (manifestFiles.length === 0) {
      throw new RenderError(
        'no-manifests',
        `path "${dir || '.'}" holds no YAML or JSON manifests (${files.length} other files)`,
        where,
      );
    }
    let digest: string;
    let manifests: unknown[];
    try {
      const objects = parseManifestFiles(
        manifestFiles.map((f) => ({
          path: dir ? f.slice(dir.length + 1) : f,
          content: this.mirrors.mirrors.readFile(src.repositoryId, src.revision, f),
        })),
        // The bundle is stored as jsonb, which re-sorts keys; SOPS's MAC depends on their order, so
        // encrypted objects carry it along (ciphertext only: the hub never decrypts).
      ).map(preserveSopsKeyOrder);
      if (objects.length === 0) {
        throw new RenderError('no-manifests', `path "${dir || '.'}" declares no Kubernetes objects`, where);
      }
      digest = bundleDigest(objects);
      manifests = objects;
    } catch (e) {
      if (e instanceof ManifestError) {
        const file = dir ? `${dir}/${e.file}` : e.file;
        throw new RenderError(
          `manifest-${e.code.toLowerCase().replaceAll('_', '-')}`,
          `${file}${e.line ? `:${e.line}` : ''}: ${e.message.replace(`${e.file}${e.line ? `:${e.line}` : ''}: `, '')}`,
          `${file}${e.line ? `:${e.line}` : ''}`,
        );
      }
      throw e;
    }
    await this.db.prisma.bundle.upsert({
      where: { digest },
      create: {
        digest,
        manifests: toJson(manifests),
        repoUrl: src.repoUrl,
        revision: src.revision,
        path: dir || '.',
      },
      update: {},
    });
    return digest;
  }
}
