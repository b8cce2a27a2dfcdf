// Why an expansion could not finish, as the appset stores it, and the generators' errors turned into one.
import { GeneratorError } from '@flotilla/generators';
import type { ResolvedRef } from './expansion-git-reads.js';

/** Why an expansion could not finish; stored on the appset. Nothing about its targets changed. */
export class ExpansionError extends Error {
  override readonly name = 'ExpansionError';
  /** The branch and tag heads the failed expansion had resolved, to tell a stale failure from a real one. */
  refs: ResolvedRef[] = [];
  constructor(
    readonly code: string,
    message: string,
    readonly path?: string,
  ) {
    super(message);
  }
}

/** A generator's error as the appset stores it, its code unchanged; anything else as it is. */
export function fromGeneratorError(e: unknown): unknown {
  if (e instanceof GeneratorError) return new ExpansionError(e.code, e.message, e.path);
  return e;
}
