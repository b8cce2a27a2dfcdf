import { type IgnoreRuleInput } from '@flotilla/contract';
import { compileIgnoreRules, identityOf } from './ignore-rules.js';
import { getAt, isPlainObject, type PathSegment } from './json-pointer.js';
import { listSchemaOf, mergeKeyOf } from './list-schema.js';

/**
 * Argo CD's `RespectIgnoreDifferences`: a copy of `desired` in which every field an ignore rule's
 * jsonPointers or jqPathExpressions match in `live` carries the live value, so applying it leaves
 * those fields as they are (the autoscaler's `spec.replicas`, a sidecar's image). Fields the rules
 * match only in `desired` keep the desired value (there is nothing live to keep). Rules by
 * managedFieldsManagers are not used here. Pure; throws DiffError naming a rule that cannot work.
 */
export function keepLiveIgnoredFields<T>(desired: T, live: unknown, rules: readonly IgnoreRuleInput[]): T {
  const out = structuredClone(desired);
  const id = identityOf(desired, live);
  for (const rule of compileIgnoreRules(rules)) {
    if (!rule.matches(id)) continue;
    for (const path of rule.pathsIn(live)) setLiveValueAt(out, live, id.kind, path, getAt(live, path));
  }
  return out;
}

/**
 * Sets a live value into `desired` at the place that corresponds to `livePath`. A path found on
 * the live object indexes live lists; in a keyed list (containers by name, ports by port and
 * protocol, env by name) the desired element is the one with the same merge key, as the server
 * merges them, never the one at the same index. An entry only one side has changes nothing.
 * Missing objects on the way are created; a positional list's index must already exist.
 */
function setLiveValueAt(
  desired: unknown,
  live: unknown,
  kind: string,
  livePath: readonly PathSegment[],
  value: unknown,
): void {
  if (livePath.length === 0) return;
  let node = desired;
  let liveNode = live;
  const walked: PathSegment[] = [];
  for (let i = 0; i < livePath.length; i++) {
    const seg = livePath[i] as PathSegment;
    const isLast = i === livePath.length - 1;
    let step: PathSegment | undefined = seg;
    if (Array.isArray(node) && typeof seg === 'number') {
      step = desiredIndexOf(node, Array.isArray(liveNode) ? liveNode[seg] : undefined, kind, walked, seg);
      if (step === undefined) return;
    } else if (!(isPlainObject(node) && typeof seg === 'string')) {
      return;
    }
    if (isLast) {
      (node as Record<PathSegment, unknown>)[step] = structuredClone(value);
      return;
    }
    if (
      isPlainObject(node) &&
      typeof step === 'string' &&
      !isPlainObject(node[step]) &&
      !Array.isArray(node[step])
    ) {
      // Only an object can be created here: the next step names a key, not an index.
      if (typeof livePath[i + 1] !== 'string') return;
      node[step] = {};
    }
    node = (node as Record<PathSegment, unknown>)[step];
    liveNode =
      isPlainObject(liveNode) || Array.isArray(liveNode)
        ? (liveNode as Record<PathSegment, unknown>)[seg]
        : undefined;
    walked.push(seg);
  }
}

/** The index in a desired list of the element that live element `liveIndex` merges with. */
function desiredIndexOf(
  list: unknown[],
  liveElement: unknown,
  kind: string,
  path: readonly PathSegment[],
  liveIndex: number,
): number | undefined {
  const schema = listSchemaOf(kind, path);
  if (schema.type !== 'map') return liveIndex < list.length ? liveIndex : undefined;
  const key = mergeKeyOf(liveElement, schema);
  if (key === undefined) return undefined;
  const matches = list.flatMap((el, i) => (mergeKeyOf(el, schema) === key ? [i] : []));
  // Two desired entries with one key is a manifest the server refuses; keep nothing rather than guess.
  return matches.length === 1 ? matches[0] : undefined;
}
