// How the hub reaches Git: how often it polls repositories, where file:// ones may live, and Git's timeouts.
import { z } from 'zod';
import type { DevModeEnv } from './dev-mode.js';

export const sourcePollingEnv = z.object({
  SOURCE_POLL_INTERVAL_SECONDS: z.coerce
    .number()
    .positive()
    .default(30)
    .describe('How often every repository is fetched.'),
});

export const gitEnv = z.object({
  FLOTILLA_LOCAL_REPOSITORIES: z
    .string()
    .optional()
    .superRefine((v, ctx) => {
      const bad = (v ?? '').split(',').find((d) => d.trim() !== '' && !d.trim().startsWith('/'));
      if (bad !== undefined)
        ctx.addIssue({ code: 'custom', message: `expected absolute directories; got "${bad}"` });
    })
    .describe(
      'Directories (comma-separated, absolute) under which file:// repositories may live. Unset: none, or any directory in development mode. Never the hub data dir (its mirrors).',
    ),
  GIT_CONNECT_TIMEOUT_SECONDS: z.coerce
    .number()
    .positive()
    .default(15)
    .describe(
      'Longest a Git fetch may wait for its first byte from the remote (an unresponsive or non-Git server).',
    ),
  GIT_IDLE_TIMEOUT_SECONDS: z.coerce
    .number()
    .positive()
    .default(60)
    .describe(
      'Longest a Git fetch may go without progress (no output) before it is stopped; a fetch making progress runs on.',
    ),
  GIT_FETCH_MAX_SECONDS: z.coerce
    .number()
    .positive()
    .default(3600)
    .describe('Longest one Git fetch may run in all, progress or not.'),
  REVERT_AUTHOR_NAME: z
    .string()
    .trim()
    .min(1)
    .default('Flotilla')
    .describe('The author (and committer) name of the revert commits the hub writes.'),
  REVERT_AUTHOR_EMAIL: z
    .string()
    .trim()
    .min(1)
    .default('flotilla@localhost')
    .describe('The author (and committer) e-mail of the revert commits the hub writes.'),
  REVERT_AFTER_ROLLBACK: z
    .enum(['0', '1', 'false', 'true'], 'expected 1 or true, 0 or false')
    .default('1')
    .transform((v) => v === '1' || v === 'true')
    .describe(
      '1 = after an automatic rollback, open a revert pull request for the pinned target when its repository has write access; 0 = only on request.',
    ),
});

export interface GitConfig {
  sources: { pollIntervalSeconds: number };
  /** Where file:// repositories may live ('any' = development mode without a list), and Git's timeouts. */
  git: {
    localRepositories: string[] | 'any';
    connectTimeoutSeconds: number;
    idleTimeoutSeconds: number;
    fetchMaxSeconds: number;
  };
  /** Rollback by revert: who the hub's revert commits are by, and whether a rollback opens one. */
  reverts: { author: { name: string; email: string }; afterRollback: boolean };
}

export function gitConfig(
  e: z.output<typeof sourcePollingEnv> & z.output<typeof gitEnv> & DevModeEnv,
): GitConfig {
  return {
    sources: { pollIntervalSeconds: e.SOURCE_POLL_INTERVAL_SECONDS },
    git: {
      localRepositories:
        e.FLOTILLA_LOCAL_REPOSITORIES !== undefined
          ? e.FLOTILLA_LOCAL_REPOSITORIES.split(',')
              .map((d) => d.trim())
              .filter(Boolean)
          : e.FLOTILLA_DEV_MODE
            ? 'any'
            : [],
      connectTimeoutSeconds: e.GIT_CONNECT_TIMEOUT_SECONDS,
      idleTimeoutSeconds: e.GIT_IDLE_TIMEOUT_SECONDS,
      fetchMaxSeconds: e.GIT_FETCH_MAX_SECONDS,
    },
    reverts: {
      author: { name: e.REVERT_AUTHOR_NAME, email: e.REVERT_AUTHOR_EMAIL },
      afterRollback: e.REVERT_AFTER_ROLLBACK,
    },
  };
}
