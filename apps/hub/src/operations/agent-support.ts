// Whether a cluster's agent can carry out what a person asks of it (see libs/contract agent-features).
import { missingAgentFeature, type RunRequestFeatures } from '@flotilla/contract';
import { HubError } from '../common/hub-error.js';

/** A cluster as the check reads it: what its agent last announced. */
export interface AgentOf {
  name: string;
  agentVersion: string | null;
  agentFeatures: readonly string[];
}

/**
 * Why the cluster's agent cannot be asked for this run, or null. An older agent would otherwise
 * take a dry run, a revision or a subset of objects for a plain sync of everything, and an ignored
 * terminate would leave a person believing a sync was stopped.
 */
export function unsupportedBy(cluster: AgentOf, run: RunRequestFeatures | { terminate: true }) {
  return missingAgentFeature(
    { cluster: cluster.name, version: cluster.agentVersion, features: cluster.agentFeatures },
    run,
  );
}

/** Refuses (409 `agent-feature-missing`, naming the feature, the field and the agent's version). */
export function requireSupport(cluster: AgentOf, run: RunRequestFeatures | { terminate: true }): void {
  const missing = unsupportedBy(cluster, run);
  if (missing) throw new HubError(409, 'agent-feature-missing', missing.message, missing.field);
}
