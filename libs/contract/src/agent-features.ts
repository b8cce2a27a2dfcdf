/**
 * What an agent says it can do beyond a plain sync, on every call to the hub (a header), so the hub
 * refuses a request an older agent would quietly run as a plain sync instead of accepting it.
 */
export const AGENT_FEATURES = [
  /** A dry-run sync: ask the API server what would change, change nothing. */
  'dry-run',
  /** Stop a requested sync it is running (`POST /api/v1/operations/:id/terminate`). */
  'terminate',
  /** A requested sync naming the revision it must run. */
  'run-revision',
  /** A requested sync of a subset of the target's objects. */
  'run-resources',
  /** Sync options for one run only. */
  'run-sync-options',
  /** `--force`: delete and create again an object whose apply the API refuses. */
  'run-force',
] as const;
export type AgentFeature = (typeof AGENT_FEATURES)[number];

/** Header with the features an agent supports, comma-separated; absent means none (an older agent). */
export const AGENT_FEATURES_HEADER = 'x-flotilla-agent-features';
/** Header with the agent's version, so a refusal can say which agent lacks a feature. */
export const AGENT_VERSION_HEADER = 'x-flotilla-agent-version';

/** The known features a header names, sorted, each once; names this hub does not know are ignored. */
export function parseAgentFeatures(header: string | undefined): AgentFeature[] {
  const named = new Set((header ?? '').split(',').map((s) => s.trim()));
  return AGENT_FEATURES.filter((f) => named.has(f));
}

/** What a requested run asks for beyond a plain sync, as its request fields name it. */
export interface RunRequestFeatures {
  dryRun?: boolean;
  revision?: string;
  resources?: readonly unknown[];
  syncOptions?: readonly string[];
  force?: boolean;
}

/** The features a requested run needs, each with the request field that asks for it, in field order. */
export function featuresNeededBy(run: RunRequestFeatures): { feature: AgentFeature; field: string }[] {
  const needed: { feature: AgentFeature; field: string }[] = [];
  if (run.dryRun) needed.push({ feature: 'dry-run', field: 'dryRun' });
  if (run.revision !== undefined) needed.push({ feature: 'run-revision', field: 'revision' });
  if (run.resources?.length) needed.push({ feature: 'run-resources', field: 'resources' });
  if (run.syncOptions?.length) needed.push({ feature: 'run-sync-options', field: 'syncOptions' });
  if (run.force) needed.push({ feature: 'run-force', field: 'force' });
  return needed;
}

/**
 * Why an agent cannot be asked for this run, or null: the first feature it needs that the agent has
 * not announced, said with the agent's version and what to do instead.
 */
export function missingAgentFeature(
  agent: { cluster: string; version: string | null; features: readonly string[] },
  run: RunRequestFeatures | { terminate: true },
): { feature: AgentFeature; field: string; message: string } | null {
  const needed =
    'terminate' in run ? [{ feature: 'terminate' as const, field: 'operation' }] : featuresNeededBy(run);
  const missing = needed.find((n) => !agent.features.includes(n.feature));
  if (!missing) return null;
  const version = agent.version === null ? 'version unknown' : `version ${agent.version}`;
  const instead =
    missing.feature === 'terminate'
      ? 'cancel it before it starts, or upgrade the agent'
      : `upgrade the agent, or ask without ${missing.field}`;
  return {
    ...missing,
    message: `the agent of cluster "${agent.cluster}" (${version}) has not announced support for "${missing.feature}": ${instead}`,
  };
}
