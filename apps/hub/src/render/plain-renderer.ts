// Renders a directory of plain YAML/JSON manifests, read straight from the bare mirror.
import { posix } from 'node:path';
import { Injectable } from '@nestjs/common';
import {
  checkTreeEntries,
  DEFAULT_TREE_LIMITS,
  isManifestPath,
  resolveThroughLinks,
  symlinksOf,
  type TreeEntry,
} from '@flotilla/manifests';
import { GitMirrorsService } from '../sources/git/git-mirrors.service.js';
import { readGitAsync, RenderError, translateManifestError } from './render-error.js';
import type { Rendered, RenderSource } from './render-source.js';
import { parseRendered } from './rendered-objects.js';

/** The manifest files of a directory at a commit as a bundle; nothing is checked out. */
@Injectable()
export class PlainRenderer {
  constructor(private readonly mirrors: GitMirrorsService) {}

  /** `under`: the entries of `dir`; `entries`: the whole commit's (symlinks may lead out of `dir`). */
  async render(
    src: Pick<RenderSource, 'repositoryId' | 'revision'>,
    dir: string,
    under: TreeEntry[],
    entries: TreeEntry[],
    where: string,
  ): Promise<Rendered> {
    const links = symlinksOf(entries);
    translateManifestError(where, () =>
      checkTreeEntries(
        under.filter((e) => e.kind !== 'file' || isManifestPath(e.path)),
        DEFAULT_TREE_LIMITS,
        links,
      ),
    );
    const manifestEntries = under.filter((e) => e.kind !== 'submodule' && isManifestPath(e.path));
    if (manifestEntries.length === 0) {
      throw new RenderError(
        'no-manifests',
        `path "${dir || '.'}" holds no YAML or JSON manifests (${under.length} other files)`,
        where,
      );
    }
    // A symlink inside the repository is read through (checkTreeEntries refused the others).
    const contents = await readGitAsync(where, () =>
      this.mirrors.mirrors.readFiles(
        src.repositoryId,
        src.revision,
        manifestEntries.map((e) => linkedPath(e, links)),
      ),
    );
    const files = manifestEntries.map((e, i) => ({
      path: dir ? e.path.slice(dir.length + 1) : e.path,
      content: contents[i] ?? '',
    }));
    return parseRendered(files, where, dir, `path "${dir || '.'}"`);
  }
}

/** The file a (checked) symlink leads to, through any other links on the way, as a checkout reads it. */
function linkedPath(e: TreeEntry, links: ReadonlyMap<string, string>): string {
  if (e.kind !== 'symlink') return e.path;
  const from = posix.dirname(e.path) === '.' ? '' : posix.dirname(e.path);
  return resolveThroughLinks(from, e.linkTarget ?? '', links) ?? e.path;
}
