import { z } from 'zod';
import { apiAnswers } from './api-schemas.js';

/** The Git hosts whose pull-request API the hub speaks. */
export const GIT_HOST_KINDS = ['github', 'gitlab', 'gitea'] as const;
export type GitHostKind = (typeof GIT_HOST_KINDS)[number];

/**
 * A repository's write access as the API shows it (`GET /api/v1/repositories/:id/write-access`):
 * never a secret, only whether there is one and where pull requests are opened.
 */
export const writeAccessViewSchema = z
  .object({
    repository: z.string().describe('the repository URL'),
    credentials: z.object({ type: z.enum(['https-token', 'ssh-key']), username: z.string().nullable() }),
    host: z.object({
      kind: z.enum(GIT_HOST_KINDS),
      apiUrl: z.string(),
      repository: z.string().describe('the repository on the host (`owner/name`, GitLab: the full path)'),
      hasApiToken: z.boolean().describe('a separate API token is stored (else the push token serves)'),
    }),
    baseBranch: z.string().nullable().describe('reverts of targets that follow no branch go to this one'),
  })
  .register(apiAnswers, { id: 'WriteAccessView' });
export type WriteAccessView = z.infer<typeof writeAccessViewSchema>;

/** A revert the hub opened: the branch, the pull request, what it reverts and the pin it replaces. */
export const revertViewSchema = z
  .object({
    appSet: z.string(),
    target: z.string().nullable(),
    repository: z.string(),
    to: z.string().describe('the revision restored (the pin’s)'),
    head: z.string().describe('the commit the revert was written on'),
    commits: z.array(z.object({ commit: z.string(), subject: z.string() })),
    revert: z.string().describe('the revert commit'),
    branch: z.string(),
    pullRequest: z.object({ url: z.string(), number: z.number().int() }),
    restores: z
      .boolean()
      .nullable()
      .describe('after the revert, Git renders what the pinned revision rendered (null: not known yet)'),
    pins: z.array(z.object({ target: z.string(), revision: z.string(), bundleDigest: z.string() })),
    alreadyOpen: z.boolean().describe('an earlier request opened this revert; nothing new was written'),
  })
  .register(apiAnswers, { id: 'RevertView' });
export type RevertView = z.infer<typeof revertViewSchema>;
