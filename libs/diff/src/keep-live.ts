import { type IgnoreRuleInput } from '@flotilla/contract';
import { compileIgnoreRules, identityOf } from './ignore-rules.js';
import { getAt, isPlainObject, type PathSegment } from './json-pointer.js';

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
    for (const path of rule.pathsIn(live)) setAt(out, path, structuredClone(getAt(live, path)));
  }
  return out;
}

/** Sets `value` at `path`, creating missing objects on the way; an array index must already exist. */
function setAt(root: unknown, path: readonly PathSegment[], value: unknown): void {
  if (path.length === 0) return;
  let node = root;
  for (let i = 0; i < path.length - 1; i++) {
    const seg = path[i] as PathSegment;
    if (Array.isArray(node) && typeof seg === 'number') {
      if (seg >= node.length) return;
      node = node[seg];
    } else if (isPlainObject(node) && typeof seg === 'string') {
      if (!isPlainObject(node[seg]) && !Array.isArray(node[seg])) {
        // Only an object can be created here: the next step names a key, not an index.
        if (typeof path[i + 1] !== 'string') return;
        node[seg] = {};
      }
      node = node[seg];
    } else {
      return;
    }
  }
  const last = path[path.length - 1] as PathSegment;
  if (Array.isArray(node) && typeof last === 'number' && last < node.length) node[last] = value;
  else if (isPlainObject(node) && typeof last === 'string') node[last] = value;
}
