import { checkRolloutSpec } from './rollout-strategy.js';
import { checkDeletionGuardSpec } from './deletion-guard.js';
import { checkIgnoreRulesSpec } from './target-sync-settings.js';

/**
 * The checks every ApplicationSet document passes before it is stored, whether it comes through the
 * API or from a fleet repository: one path, so a document the API refuses is refused from Git too.
 * Throws the first HubError (code `invalid-appset` or the check's own, with the field path).
 * A new check belongs here, not at one of the callers.
 */
export function checkAppSetDocument(document: unknown): void {
  checkDeletionGuardSpec(document);
  checkRolloutSpec(document);
  checkIgnoreRulesSpec(document);
}
