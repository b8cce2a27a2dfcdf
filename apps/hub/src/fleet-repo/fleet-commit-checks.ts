// The checks a fleet commit passes before anything changes: the whole directory, health rules included.
import {
  compareFleetErrors,
  isFleetFile,
  isHealthRuleFile,
  validateFleetDirectory,
  validateFleetHealthRules,
  type FleetError,
  type FleetFile,
  type FleetObject,
} from '@flotilla/fleet-config';
import { withRawAppSets } from '@flotilla/plan';
import { HubError } from '../common/hub-error.js';
import { readAppSetDocument } from '../desired-state/appset-document.js';
import { checkAppSetDocument } from '../desired-state/appset-checks.js';
import { HEALTH_RULE_KIND } from '../health-rules/health-rules.service.js';
import type { GitMirrors } from '../sources/git/git-mirror.js';
import type { FleetPolicies } from './fleet-policies.js';
import type { HealthRuleObject, PlannedObject } from './fleet-plan.js';

/** A commit's objects (YAML objects and health rules), or why it is refused. */
export type FleetCommitCheck =
  | { ok: true; objects: PlannedObject[]; policies: FleetPolicies }
  | { ok: false; error: { code: 'invalid-commit'; message: string; errors: FleetError[] } };

/** The fleet files (objects and health rules) of the commit under `path`, read from the mirror. */
export function readFleetFiles(
  mirrors: GitMirrors,
  repositoryId: string,
  commit: string,
  path: string,
): FleetFile[] {
  return mirrors
    .listFiles(repositoryId, commit, path)
    .filter((p) => isFleetFile(p) || isHealthRuleFile(p))
    .map((p) => ({ path: p, content: mirrors.readFile(repositoryId, commit, p) }));
}

/** Validates the whole directory; any error refuses the whole commit (the first 100 errors named). */
export async function checkFleetCommit(files: FleetFile[], commit: string): Promise<FleetCommitCheck> {
  const validation = validateFleetDirectory(files);
  const rules = await validateFleetHealthRules(files);
  const fleetObjects = withRawAppSets(validation.objects, files);
  // The hub's own appset checks, the same the API makes (deletion guard, rollout, ignore rules).
  const errors = [...validation.errors, ...rules.errors, ...hubChecks(fleetObjects)].sort(compareFleetErrors);
  if (errors.length > 0) {
    return {
      ok: false,
      error: {
        code: 'invalid-commit',
        message: `commit ${commit.slice(0, 12)} has ${errors.length} invalid object(s); nothing changed`,
        errors: errors.slice(0, 100),
      },
    };
  }
  const healthRules = rules.rules.map((r): HealthRuleObject => ({
    kind: HEALTH_RULE_KIND,
    name: r.key,
    file: r.file,
    document: 0,
    line: 1,
    object: { script: r.script },
  }));
  return {
    ok: true,
    objects: [...fleetObjects, ...healthRules],
    policies: { policies: validation.policies, params: validation.params },
  };
}

/**
 * What the API's checks (checkAppSetDocument) say about each ApplicationSet of the commit, as fleet
 * errors naming its file, document and field, so the refusal reads like any other invalid object.
 */
function hubChecks(objects: readonly FleetObject[]): FleetError[] {
  const errors: FleetError[] = [];
  for (const o of objects) {
    if (o.kind !== 'ApplicationSet') continue;
    try {
      checkAppSetDocument(readAppSetDocument(o.object).document);
    } catch (e) {
      if (!(e instanceof HubError)) throw e;
      errors.push({
        code: 'invalid-field',
        file: o.file,
        document: o.document,
        line: o.line,
        kind: o.kind,
        name: o.name,
        path: e.path ?? '(root)',
        message: e.message,
      });
    }
  }
  return errors;
}
