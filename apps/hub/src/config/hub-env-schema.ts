// Every environment variable the hub reads, composed from each concern's schema in the order `.env.example` lists them.
import { z } from 'zod';
import { accessEnv } from './access-env.js';
import { auditEnv } from './audit-env.js';
import { consoleEnv } from './console-env.js';
import { devModeEnv } from './dev-mode.js';
import { fleetEnv } from './fleet-env.js';
import { gitEnv, sourcePollingEnv } from './git-env.js';
import { renderEnv } from './render-env.js';
import { reportingEnv } from './reporting-env.js';
import { retentionEnv } from './retention-env.js';
import { secretsEnv } from './secrets-env.js';
import { logEnv, serverEnv } from './server-env.js';

/**
 * Every environment variable the hub reads, with its default and a line of documentation.
 * `.env.example` is generated from this (npm run env:example -w @flotilla/hub).
 */
export const hubEnvSchema = z.object({
  ...serverEnv.shape,
  ...sourcePollingEnv.shape,
  ...accessEnv.shape,
  ...fleetEnv.shape,
  ...renderEnv.shape,
  ...secretsEnv.shape,
  ...devModeEnv.shape,
  ...reportingEnv.shape,
  ...gitEnv.shape,
  ...consoleEnv.shape,
  ...retentionEnv.shape,
  ...auditEnv.shape,
  ...logEnv.shape,
});
export type HubEnv = z.output<typeof hubEnvSchema>;
