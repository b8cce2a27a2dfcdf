import { createHash } from 'node:crypto';
import {
  type AnyHookPhase,
  type Assignment,
  type KubeObject,
  type ResourceResult,
  groupOf,
} from '@flotilla/contract';
import { type KubeClient, idOf } from '../kube/kube-client.js';
import { applyAs } from './apply-as.js';
import { applyModeOf } from './apply-mode.js';
import { type HookDeletePolicy } from './hooks.js';
import { prepareObject } from './prepare-object.js';
import { describeRef, refOfId, refOfManifest } from './resource-ref.js';
import { SyncAborted } from './sync-errors.js';
import { type Step, groupByWave } from './sync-steps.js';
import { type SyncWaits } from './sync-waits.js';

/** What running hooks needs of its run: the cluster and target, where results go, and its waits. */
export interface HookRunContext {
  readonly input: { readonly kube: KubeClient; readonly assignment: Assignment };
  readonly results: ResourceResult[];
  readonly waits: SyncWaits;
}

/** Marks each object made from a generateName hook: which target's hook, in which namespace, it was. */
export const GENERATED_HOOK_LABEL = 'flotilla.dev/generated-hook';

/**
 * The label value shared by every run's object of one generateName hook: a digest (a label value
 * allows 63 characters, and a generateName ends in '-', which a label value may not).
 */
export function generatedHookLabel(target: string, obj: KubeObject): string {
  const identity = [
    target,
    groupOf(obj.apiVersion),
    obj.kind,
    obj.metadata.namespace ?? '',
    obj.metadata.generateName,
  ];
  return createHash('sha256').update(JSON.stringify(identity)).digest('hex').slice(0, 40);
}

/**
 * Runs the hooks of one phase, wave by wave: each wave's hooks are created together (after
 * deleting a previous run's object under BeforeHookCreation), then awaited until each has
 * finished — Healthy is success, Degraded failure — and deleted as their policies say.
 * Throws SyncAborted when a hook fails or does not finish in time.
 */
export async function runHooks(
  ctx: HookRunContext,
  phase: AnyHookPhase,
  steps: readonly Step[],
): Promise<void> {
  for (const wave of groupByWave(steps)) {
    const started: { obj: KubeObject; policies: HookDeletePolicy[]; notes: string[] }[] = [];
    const failures: string[] = [];
    for (const s of wave.steps) {
      if (s.role.kind !== 'hook') continue;
      ctx.waits.checkTerminated();
      const policies = s.role.deletePolicies;
      let ref = refOfManifest(s.manifest);
      try {
        const obj = await prepareObject(ctx.input.kube, ctx.input.assignment, s.manifest);
        ref = refOfManifest(obj);
        const mode = applyModeOf(obj, ctx.input.assignment.syncPolicy);
        if (obj.metadata.name === '') {
          started.push({ policies, ...(await createGenerated(ctx, obj, policies, mode.validate)) });
          continue;
        }
        if (policies.includes('BeforeHookCreation')) await ctx.waits.deleteAndWait(obj);
        const live = mode.write === 'client-side-apply' ? await ctx.input.kube.get(idOf(obj)) : undefined;
        await applyAs(ctx.input.kube, mode, obj, live);
        started.push({ obj, policies, notes: [] });
      } catch (err) {
        ctx.results.push({ ...ref, action: 'failed', hookPhase: phase, message: (err as Error).message });
        failures.push(`${describeRef(ref)}: ${(err as Error).message}`);
      }
    }
    const outcomes = await ctx.waits.waitFinished(started.map((h) => h.obj));
    for (const [i, h] of started.entries()) {
      const outcome = outcomes[i] as { ok: boolean; message: string };
      const ref = refOfId(idOf(h.obj));
      let message = [...h.notes, outcome.message].filter((m) => m !== '').join('; ');
      const policy: HookDeletePolicy = outcome.ok ? 'HookSucceeded' : 'HookFailed';
      if (h.policies.includes(policy)) {
        try {
          await ctx.input.kube.delete(idOf(h.obj));
          message = `${message ? `${message}; ` : ''}deleted (${policy})`;
        } catch (err) {
          message = `${message ? `${message}; ` : ''}could not delete (${policy}): ${(err as Error).message}`;
        }
      }
      ctx.results.push({ ...ref, action: outcome.ok ? 'applied' : 'failed', hookPhase: phase, message });
      if (!outcome.ok) failures.push(`${describeRef(ref)}: ${outcome.message}`);
    }
    // The hooks started are recorded above (still running, or deleted by policy) before it stops.
    ctx.waits.checkTerminated();
    if (failures.length > 0) throw new SyncAborted(`${phase} hook failed: ${failures.join('; ')}`);
  }
}

/**
 * Creates a hook named by generateName (POST: the server makes the name, fresh on every run) and
 * returns it under that name, so that waiting and delete policies apply to the object actually
 * created. Each run's object carries a label derived from the target and the hook's identity;
 * under BeforeHookCreation the earlier runs' objects of this hook are found by it and deleted first.
 */
async function createGenerated(
  ctx: HookRunContext,
  obj: KubeObject,
  policies: readonly HookDeletePolicy[],
  validate: boolean,
): Promise<{ obj: KubeObject; notes: string[] }> {
  const label = generatedHookLabel(ctx.input.assignment.name, obj);
  obj.metadata.labels = { ...obj.metadata.labels, [GENERATED_HOOK_LABEL]: label };
  delete (obj.metadata as Record<string, unknown>)['name'];
  const notes: string[] = [];
  if (policies.includes('BeforeHookCreation')) {
    // In the hook's own namespace only: all this looks at, and all a namespace-scoped agent may list.
    const namespace = obj.metadata.namespace;
    const earlier = await ctx.input.kube.list(obj.apiVersion, obj.kind, {
      labelSelector: `${GENERATED_HOOK_LABEL}=${label}`,
      ...(namespace !== undefined && { namespace }),
    });
    for (const e of earlier.items) {
      if ((e.metadata.namespace ?? '') !== (obj.metadata.namespace ?? '')) continue;
      await ctx.waits.deleteAndWait(e);
      notes.push(`deleted the earlier run's ${e.metadata.name} (BeforeHookCreation)`);
    }
  }
  const created = await ctx.input.kube.create(obj, { validate });
  return { obj: { ...obj, metadata: { ...obj.metadata, name: created.metadata.name } }, notes };
}
