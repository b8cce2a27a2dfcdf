// What a render refuses with, and how the errors of the pure checks and of the Git mirror become it.
import { ManifestError } from '@flotilla/manifests';
import { GitMirrorError } from '../sources/git/git-mirror.js';

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

/**
 * Runs a pure check and turns its ManifestError into a RenderError naming the repository file
 * (`dir`: the directory the check's file paths are relative to).
 */
export function translateManifestError<T>(where: string, fn: () => T, dir?: string): T {
  try {
    return fn();
  } catch (e) {
    if (!(e instanceof ManifestError)) throw e;
    const file = dir === undefined || e.file === '.' ? e.file : dir ? `${dir}/${e.file}` : e.file;
    const at = `${file}${e.line ? `:${e.line}` : ''}`;
    const detail = e.message.replace(`${e.file}${e.line ? `:${e.line}` : ''}: `, '');
    throw new RenderError(e.code, `${at}: ${detail}`, at || where);
  }
}

/** Runs a read of the Git mirror and turns its GitMirrorError into a RenderError at `where`. */
export function readGit<T>(where: string, fn: () => T): T {
  try {
    return fn();
  } catch (e) {
    if (e instanceof GitMirrorError) throw new RenderError(e.code, e.message, where);
    throw e;
  }
}

/** readGit for a read that is awaited. */
export async function readGitAsync<T>(where: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (e instanceof GitMirrorError) throw new RenderError(e.code, e.message, where);
    throw e;
  }
}
