import { type Assignment, type KubeObject, type ResourceResult, groupOf } from '@flotilla/contract';
import {
  compilePolicySet,
  describeViolation,
  formatPolicyPath,
  gateBundle,
  type PolicySet,
  type KubeObject as PolicyObject,
} from '@flotilla/policy';
import { type KubeClient } from '../kube/kube-client.js';
import { type ResourceId } from '../state/state-store.js';

/** Compiled sets by their documents' text: the same policies come with every sync of every target. */
const compiled = new Map<string, PolicySet>();
const COMPILED_MAX = 32;

function compiledSet(policies: NonNullable<Assignment['policies']>): PolicySet {
  const key = JSON.stringify(policies.documents);
  const known = compiled.get(key);
  if (known) return known;
  const { set, errors } = compilePolicySet(policies.documents);
  const first = errors[0];
  // The hub compiled the same documents: a set this agent cannot compile is refused, never skipped.
  if (first)
    throw new Error(
      `the assignment's policy ${first.kind} ${first.name ?? ''} does not compile at ${formatPolicyPath(first.path)}: ${first.message}`,
    );
  if (compiled.size >= COMPILED_MAX) compiled.delete(compiled.keys().next().value ?? '');
  compiled.set(key, set);
  return set;
}

/** The live object of each manifest this cluster has, read once: a policy then judges an UPDATE. */
async function liveObjects(
  kube: KubeClient,
  assignment: Assignment,
  manifests: readonly KubeObject[],
): Promise<Map<KubeObject, KubeObject>> {
  const live = new Map<KubeObject, KubeObject>();
  for (const m of manifests) {
    if (m.metadata.name === '') continue; // generateName: always created anew
    let namespaced: boolean;
    try {
      namespaced = (await kube.scopeOf(m.apiVersion, m.kind)).namespaced;
    } catch {
      continue; // a kind the cluster does not know yet (its CRD is in the bundle): a CREATE
    }
    const id: ResourceId = { apiVersion: m.apiVersion, kind: m.kind, name: m.metadata.name };
    if (namespaced) id.namespace = m.metadata.namespace ?? assignment.namespace;
    const found = await kube.get(id);
    if (found) live.set(m, found);
  }
  return live;
}

/**
 * The agent's own check of a bundle against the admission policies its assignment carries, before
 * anything is applied: the hub judged it already, but a hub that was bypassed (or an older one) must
 * not get a denied object into the cluster. Each object is judged with its live version as
 * `oldObject` when the cluster has it. Returns one `failed` result per denied object (every Deny in
 * its message); empty when nothing is denied or no policy applies.
 */
export async function policyRefusals(
  kube: KubeClient,
  assignment: Assignment,
  manifests: readonly KubeObject[],
): Promise<ResourceResult[]> {
  if (!assignment.policies) return [];
  const set = compiledSet(assignment.policies);
  const live = await liveObjects(kube, assignment, manifests);
  const verdict = gateBundle(set, manifests, {
    namespace: assignment.namespace,
    params: assignment.policies.params,
    oldObjectOf: (o) => (live.get(o as KubeObject) as PolicyObject | undefined) ?? null,
  });
  // As at the hub: an active break-glass lets through only the Deny of a policy (or binding) that
  // says `flotilla.dev/break-glass: allow`; the hub audited the bypass when it released the bundle.
  const now = Date.now();
  const breakGlass = assignment.breakGlass.some((b) => Date.parse(b.expiresAt) > now);
  const byObject = new Map<string, ResourceResult>();
  for (const d of verdict.denials) {
    if (breakGlass && d.breakGlassAllowed) continue;
    const key = JSON.stringify(d.object);
    const known = byObject.get(key);
    if (known) {
      known.message += `; ${describeViolation(d)}`;
      continue;
    }
    byObject.set(key, {
      group: groupOf(d.object.apiVersion),
      kind: d.object.kind,
      name: d.object.name,
      ...(d.object.namespace !== null && { namespace: d.object.namespace }),
      action: 'failed',
      message: describeViolation(d),
    });
  }
  return [...byObject.values()];
}
