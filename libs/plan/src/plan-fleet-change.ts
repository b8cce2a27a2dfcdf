import { groupOf, type KubeObject } from '@flotilla/contract';
import { diffLabel, renderUnifiedDiff } from '@flotilla/diff';
import {
  checkDestination,
  checkObject,
  checkRepository,
  literalRepoFields,
  projectNameOf,
  restrictionsFor,
  rolloutStrategySpecSchema,
  scopeFromManifests,
  type ProjectSpec,
  type ProjectViolation,
  type FleetObject,
  type FleetPolicy,
  type FleetPolicyParam,
} from '@flotilla/fleet-config';
import { type LabelSelector } from '@flotilla/labels';
import { compilePolicySet, evaluatePolicies, policyContext, scopedPolicySet } from '@flotilla/policy';
import { targetWindowStatus, type NamedSyncWindow } from '@flotilla/windows';
import { deletionGuardLimit, evaluateDeletionGuard, type GuardInput } from './deletion-guard.js';
import {
  type AppSetPlan,
  type Change,
  type FleetObjectChange,
  type GuardReport,
  type ObjectChange,
  type PlanReport,
  type PolicyViolation,
  type ProjectViolationReport,
  type TargetPlan,
} from './plan-report.js';
import { assignSteps, stepName } from './rollout-steps.js';

/** One target of one side, rendered: what the hub would hand the cluster's agent. */
export interface PlannedTarget {
  appSet: string;
  name: string;
  /** The destination cluster's name; null when the inventory does not know it. */
  cluster: string | null;
  clusterServer: string | null;
  /** The destination namespace ('' when none). */
  namespace: string;
  /** The repository URL of each of the target's sources, for its project's sourceRepos. */
  repoURLs: readonly string[];
  /** The bundle digest of `objects`, as the hub computes it. */
  digest: string;
  objects: readonly KubeObject[];
}

/** One revision of the fleet, read and rendered by the caller (the pure part starts here). */
export interface FleetSide {
  /** The commit, or null for a directory that is not read from Git. */
  revision: string | null;
  /** The valid fleet objects, ApplicationSets as stored (see `withRawAppSets`). */
  objects: readonly FleetObject[];
  policies: readonly FleetPolicy[];
  params: readonly FleetPolicyParam[];
  targets: readonly PlannedTarget[];
  /** Each cluster's labels on this side (its ClusterGroups applied), for rollout steps. */
  clusterLabels: ReadonlyMap<string, Readonly<Record<string, string>>>;
}

export interface PlanOptions {
  /** The time sync windows are evaluated at. */
  at: Date;
  /** The hub's DELETION_GUARD_PERCENT. */
  deletionGuardPercent: number;
  /**
   * Windows that live outside the fleet repository being planned (created through the hub's API, or
   * declared by another fleet source): the same on both sides, they hold targets as the repository's do.
   */
  otherWindows?: readonly NamedSyncWindow[];
}

const SIDES = { old: 'base', new: 'head' } as const;

/**
 * What merging `head` over `base` would do to the fleet, as the hub would do it: targets added,
 * removed and changed per appset with a unified diff per object, the rollout step each cluster falls
 * in, the windows that would hold it, the deletion guard's verdicts, the fleet objects that change,
 * and the head's admission policies on what would be applied. Deterministic: sorted by name.
 */
export function planFleetChange(base: FleetSide, head: FleetSide, options: PlanOptions): PlanReport {
  const fleetObjects = diffFleetObjects(base, head);
  const windows = [...namedWindows(head.objects), ...(options.otherWindows ?? [])];
  const baseAppSets = appSetsOf(base.objects);
  const headAppSets = appSetsOf(head.objects);
  const baseTargets = byAppSet(base.targets);
  const headTargets = byAppSet(head.targets);

  const fleetGuard = fleetDeletionGuard(base, head, baseAppSets, headAppSets, baseTargets, options);
  const names = [...new Set([...baseAppSets.keys(), ...headAppSets.keys()])].sort(compare);
  const appSets: AppSetPlan[] = [];
  const diff = memoizedDiff();
  for (const name of names) {
    const plan = planAppSet(name, {
      baseDoc: baseAppSets.get(name),
      headDoc: headAppSets.get(name),
      baseTargets: baseTargets.get(name) ?? [],
      headTargets: headTargets.get(name) ?? [],
      clusterLabels: head.clusterLabels,
      windows,
      options,
      fleetTargetsGuard: fleetGuard.targets,
      changedInFleet: fleetObjects.some((o) => o.kind === 'ApplicationSet' && o.name === name),
      diff,
    });
    appSets.push(plan);
  }

  const policies = evaluateHeadPolicies(base, head, appSets);
  const projects = { violations: projectViolations(head, headAppSets, appSets) };
  const targets = appSets.flatMap((a) => a.targets);
  const count = (c: Change) => targets.filter((t) => t.change === c).length;
  const countSets = (c: AppSetPlan['change']) => appSets.filter((a) => a.change === c).length;
  const objectsChanged = targets.reduce((n, t) => n + t.objects.length, 0);
  const guardHolds =
    appSets.filter((a) => a.change !== 'removed' && a.deletionGuard.wouldHold).length +
    (fleetGuard.objects.wouldHold || fleetGuard.targets.wouldHold ? 1 : 0);
  return {
    base: { revision: base.revision },
    head: { revision: head.revision },
    at: options.at.toISOString(),
    changed: targets.length > 0 || fleetObjects.length > 0,
    summary: {
      appSets: { added: countSets('added'), removed: countSets('removed'), changed: countSets('changed') },
      targets: {
        added: count('added'),
        removed: count('removed'),
        changed: count('changed'),
        unchanged: appSets.reduce((n, a) => n + a.unchangedTargets, 0),
      },
      objectsChanged,
      fleetObjectsChanged: fleetObjects.length,
      guardHolds,
      heldByWindows: targets.filter((t) => t.change !== 'removed' && !t.windows.canSync).length,
      policyDenials: policies.violations.filter((v) => v.action === 'Deny').length,
      projectViolations: projects.violations.length,
    },
    fleet: { objects: fleetObjects, deletionGuard: fleetGuard },
    appSets,
    projects,
    policies,
  };
}

/**
 * What the head's Projects say of every target of the head (the hub checks them all on each
 * expansion, so a Project edit can refuse targets that do not change), with the expander's checks
 * (libs/fleet-config): the repositories the appset and each source name, each destination, and
 * each object whose scope the bundle tells.
 */
function projectViolations(
  head: FleetSide,
  documents: ReadonlyMap<string, unknown>,
  appSets: readonly AppSetPlan[],
): ProjectViolationReport[] {
  const specs = new Map(
    head.objects.flatMap((o) => (o.kind === 'Project' ? [[o.name, o.object.spec] as const] : [])),
  );
  const targets = byAppSet(head.targets);
  const out: ProjectViolationReport[] = [];
  for (const a of appSets) {
    if (a.change === 'removed') continue;
    // Not defined: `default`, which allows everything (another name, validation has refused).
    const spec = specs.get(a.project);
    if (spec === undefined) continue;
    const report = (target: PlannedTarget | null, v: ProjectViolation | null): void => {
      if (v)
        out.push({ appSet: a.name, target: target?.name ?? null, cluster: target?.cluster ?? null, ...v });
    };
    for (const { repoURL } of literalRepoFields(documents.get(a.name)))
      report(null, checkRepository(a.project, spec, repoURL));
    for (const t of targets.get(a.name) ?? []) report(t, firstTargetViolation(a.project, spec, t, head));
  }
  return out;
}

interface AppSetInputs {
  baseDoc: unknown;
  headDoc: unknown;
  baseTargets: PlannedTarget[];
  headTargets: PlannedTarget[];
  clusterLabels: ReadonlyMap<string, Readonly<Record<string, string>>>;
  windows: NamedSyncWindow[];
  options: PlanOptions;
  fleetTargetsGuard: GuardReport;
  changedInFleet: boolean;
  diff: (before: readonly KubeObject[], after: readonly KubeObject[]) => ObjectChange[];
}

const NONE: readonly KubeObject[] = [];

/**
 * `diffObjects`, once per distinct pair of bundles: targets that share a render (the same directory
 * on a thousand clusters) share its objects, and so their diff.
 */
function memoizedDiff(): AppSetInputs['diff'] {
  const cache = new WeakMap<readonly KubeObject[], WeakMap<readonly KubeObject[], ObjectChange[]>>();
  return (before, after) => {
    let byAfter = cache.get(before);
    if (!byAfter) {
      byAfter = new WeakMap();
      cache.set(before, byAfter);
    }
    let out = byAfter.get(after);
    if (!out) {
      out = diffObjects(before, after);
      byAfter.set(after, out);
    }
    return out;
  };
}

function planAppSet(name: string, input: AppSetInputs): AppSetPlan {
  const doc = input.headDoc ?? input.baseDoc;
  const project = projectOf(name, doc);
  const rollout = input.headDoc === undefined ? null : rolloutOf(name, input.headDoc);
  const baseByName = new Map(input.baseTargets.map((t) => [t.name, t]));
  const headByName = new Map(input.headTargets.map((t) => [t.name, t]));

  // Which step each head target falls in: the same assignment the hub's rollout makes.
  const stepOf = new Map<string, { index: number; name: string }>();
  if (rollout) {
    const candidates = input.headTargets.map((t) => ({
      name: t.name,
      clusterLabels: { ...(t.cluster === null ? {} : input.clusterLabels.get(t.cluster)) },
    }));
    assignSteps(rollout.steps, candidates).forEach((group, index) => {
      for (const t of group.targets) stepOf.set(t.name, { index, name: group.step.name });
    });
  }

  const targets: TargetPlan[] = [];
  let unchanged = 0;
  for (const targetName of [...new Set([...baseByName.keys(), ...headByName.keys()])].sort(compare)) {
    const before = baseByName.get(targetName);
    const after = headByName.get(targetName);
    const change: Change | null = !before
      ? 'added'
      : !after
        ? 'removed'
        : before.digest !== after.digest
          ? 'changed'
          : null;
    if (change === null) {
      unchanged++;
      continue;
    }
    const t = (after ?? before) as PlannedTarget;
    const status = targetWindowStatus(
      input.windows,
      {
        application: t.name,
        namespace: t.namespace,
        cluster: t.cluster ?? '',
        ...(t.clusterServer === null ? {} : { clusterServer: t.clusterServer }),
        project,
      },
      input.options.at,
    );
    targets.push({
      name: targetName,
      cluster: t.cluster,
      change,
      step: change === 'removed' ? null : (stepOf.get(targetName) ?? null),
      windows: {
        canSync: status.canSync,
        matching: status.matching,
        active: status.active,
        heldUntil: status.canSync || status.nextOpen === null ? null : status.nextOpen.toISOString(),
      },
      digest: { base: before?.digest ?? null, head: after?.digest ?? null },
      objects: input.diff(before?.objects ?? NONE, after?.objects ?? NONE),
    });
  }

  const removedTargets = targets.filter((t) => t.change === 'removed').length;
  const deletionGuard =
    input.headDoc === undefined
      ? // A removed appset is judged by the fleet source's guard, over every appset it manages.
        input.fleetTargetsGuard
      : guard(
          {
            current: input.baseTargets.length,
            deleting: removedTargets,
            after: input.headTargets.length,
            baseline: null,
          },
          deletionGuardLimit(input.headDoc, input.options.deletionGuardPercent),
        );
  return {
    name,
    change:
      input.baseDoc === undefined
        ? 'added'
        : input.headDoc === undefined
          ? 'removed'
          : targets.length > 0 || input.changedInFleet
            ? 'changed'
            : 'unchanged',
    project,
    rollout: rollout && { strategy: rollout.strategy, steps: rollout.steps.map((s) => s.name) },
    targets,
    unchangedTargets: unchanged,
    deletionGuard,
  };
}

/** Per object: added, removed or changed, with its unified diff; objects alike on both sides are left out. */
function diffObjects(before: readonly KubeObject[], after: readonly KubeObject[]): ObjectChange[] {
  const old = new Map(before.map((o) => [objectKey(o), o]));
  const now = new Map(after.map((o) => [objectKey(o), o]));
  const out: ObjectChange[] = [];
  for (const key of [...new Set([...old.keys(), ...now.keys()])].sort(compare)) {
    const b = old.get(key);
    const a = now.get(key);
    const o = (a ?? b) as KubeObject;
    const id = {
      apiVersion: o.apiVersion,
      kind: o.kind,
      name: o.metadata.name,
      ...(o.metadata.namespace ? { namespace: o.metadata.namespace } : {}),
    };
    const diff = renderUnifiedDiff({
      live: b ?? null,
      desired: a ?? null,
      label: diffLabel(id),
      sides: SIDES,
    });
    if (b && a && diff.text === '') continue;
    out.push({
      apiVersion: o.apiVersion,
      kind: o.kind,
      namespace: o.metadata.namespace || null,
      name: o.metadata.name,
      change: !b ? 'added' : !a ? 'removed' : 'changed',
      diff: diff.text,
      truncated: diff.truncated,
    });
  }
  return out;
}

/** An object's identity across revisions: its API group (not version: v1beta1 → v1 is a change), kind, namespace, name. */
function objectKey(o: KubeObject): string {
  const slash = o.apiVersion.indexOf('/');
  const group = slash === -1 ? '' : o.apiVersion.slice(0, slash);
  return [o.kind, o.metadata.namespace ?? '', o.metadata.name, group].join('\u0000');
}

/** Flotilla's fleet objects and the admission policies, by kind and name, with a YAML diff of each. */
function diffFleetObjects(base: FleetSide, head: FleetSide): FleetObjectChange[] {
  const index = (side: FleetSide) =>
    new Map<string, { kind: string; name: string; file: string; object: unknown }>(
      [...side.objects, ...side.policies].map((o) => [
        `${o.kind}/${o.name}`,
        { kind: o.kind, name: o.name, file: o.file, object: o.object },
      ]),
    );
  const old = index(base);
  const now = index(head);
  const out: FleetObjectChange[] = [];
  for (const key of [...new Set([...old.keys(), ...now.keys()])].sort(compare)) {
    const b = old.get(key);
    const a = now.get(key);
    const o = (a ?? b) as { kind: string; name: string; file: string };
    const diff = renderUnifiedDiff({
      live: b?.object ?? null,
      desired: a?.object ?? null,
      label: key,
      sides: SIDES,
    });
    if (b && a && diff.text === '') continue;
    out.push({
      kind: o.kind,
      name: o.name,
      change: !b ? 'added' : !a ? 'removed' : 'changed',
      file: o.file,
      diff: diff.text,
    });
  }
  return out;
}

/**
 * The fleet source's guard as the hub judges a commit: on its objects, and on the targets of the
 * appsets the commit deletes. Offline there is no recorded baseline: the current count stands for it.
 */
function fleetDeletionGuard(
  base: FleetSide,
  head: FleetSide,
  baseAppSets: ReadonlyMap<string, unknown>,
  headAppSets: ReadonlyMap<string, unknown>,
  baseTargets: ReadonlyMap<string, PlannedTarget[]>,
  options: PlanOptions,
): { objects: GuardReport; targets: GuardReport } {
  const keys = (side: FleetSide) => new Set(side.objects.map((o) => `${o.kind}/${o.name}`));
  const before = keys(base);
  const after = keys(head);
  const deletingObjects = [...before].filter((k) => !after.has(k)).length;
  const creatingObjects = [...after].filter((k) => !before.has(k)).length;
  const current = base.targets.length;
  let deleting = 0;
  for (const name of baseAppSets.keys())
    if (!headAppSets.has(name)) deleting += baseTargets.get(name)?.length ?? 0;
  const limit = options.deletionGuardPercent;
  return {
    objects: guard(
      {
        current: before.size,
        deleting: deletingObjects,
        after: before.size - deletingObjects + creatingObjects,
        baseline: null,
      },
      limit,
    ),
    targets: guard({ current, deleting, after: current - deleting, baseline: null }, limit),
  };
}

function guard(input: GuardInput, limit: number): GuardReport {
  const verdict = evaluateDeletionGuard(input, limit);
  return {
    wouldHold: verdict.wouldHold,
    deletePercent: verdict.deletePercent,
    limit: verdict.limit,
    current: input.current,
    deleting: input.deleting,
    after: input.after,
  };
}

/**
 * The head's admission policies on what a sync would apply: every object of the targets added or
 * changed — and of every target when the policies themselves change, since a new rule may deny what
 * is already there. The base object is the request's old object (an UPDATE).
 */
function evaluateHeadPolicies(
  base: FleetSide,
  head: FleetSide,
  appSets: readonly AppSetPlan[],
): PlanReport['policies'] {
  const result: PlanReport['policies'] = { evaluated: 0, allowed: true, violations: [] };
  if (head.policies.length === 0) return result;
  const { set } = compilePolicySet(head.policies.map((p) => p.object));
  const policiesChanged =
    JSON.stringify(base.policies.map((p) => p.object)) !== JSON.stringify(head.policies.map((p) => p.object));
  const moving = new Set(
    appSets.flatMap((a) => a.targets.filter((t) => t.change !== 'removed').map((t) => `${a.name}/${t.name}`)),
  );
  const baseByKey = new Map(base.targets.map((t) => [`${t.appSet}/${t.name}`, t]));
  const projectOf = new Map(appSets.map((a) => [a.name, a.project]));
  const params = head.params.map((p) => p.object);
  const violations: PolicyViolation[] = [];
  for (const t of [...head.targets].sort((a, b) =>
    compare(`${a.appSet}/${a.name}`, `${b.appSet}/${b.name}`),
  )) {
    if (!policiesChanged && !moving.has(`${t.appSet}/${t.name}`)) continue;
    const old = new Map(
      (baseByKey.get(`${t.appSet}/${t.name}`)?.objects ?? []).map((o) => [objectKey(o), o]),
    );
    const ctx = policyContext([...t.objects, ...params]);
    // The bindings the hub would judge this target with (their flotilla.dev/ scope annotations).
    const scoped = scopedPolicySet(set, {
      project: projectOf.get(t.appSet) ?? 'default',
      appSet: t.appSet,
      clusterLabels: head.clusterLabels.get(t.cluster ?? '') ?? {},
    });
    for (const object of t.objects) {
      result.evaluated++;
      const verdict = evaluatePolicies(
        scoped,
        {
          object,
          oldObject: old.get(objectKey(object)) ?? null,
          ...(t.namespace ? { namespace: t.namespace } : {}),
        },
        ctx,
      );
      if (!verdict.allowed) result.allowed = false;
      for (const d of verdict.decisions)
        violations.push({
          appSet: t.appSet,
          target: t.name,
          cluster: t.cluster,
          object: verdict.object,
          policy: d.policy,
          binding: d.binding,
          action: d.action,
          message: d.message,
        });
    }
  }
  result.violations = violations;
  return result;
}

/** The hub stops at a target's first refusal: its repositories, then its destination, then its objects. */
function firstTargetViolation(
  project: string,
  spec: ProjectSpec,
  t: PlannedTarget,
  head: FleetSide,
): ProjectViolation | null {
  for (const url of t.repoURLs) {
    const v = checkRepository(project, spec, url);
    if (v) return v;
  }
  const cluster = { name: t.cluster ?? '', labels: head.clusterLabels.get(t.cluster ?? '') ?? {} };
  const destination = checkDestination(project, spec, cluster, t.namespace);
  if (destination) return destination;
  const restrictions = restrictionsFor(project, spec, cluster);
  for (const o of t.objects) {
    const group = groupOf(o.apiVersion);
    const scope = scopeFromManifests(group, o.kind, t.objects);
    if (scope === undefined) continue;
    const v = checkObject(restrictions, {
      group,
      kind: o.kind,
      name: o.metadata.name,
      namespaced: scope === 'Namespaced',
      namespace: o.metadata.namespace ?? t.namespace,
    });
    if (v) return v;
  }
  return null;
}

function namedWindows(objects: readonly FleetObject[]): NamedSyncWindow[] {
  return objects.flatMap((o) => {
    if (o.kind !== 'SyncWindow') return [];
    const { projects, ...window } = o.object.spec;
    return [{ name: o.name, window, projects }];
  });
}

function appSetsOf(objects: readonly FleetObject[]): Map<string, unknown> {
  return new Map(
    objects.flatMap((o) => (o.kind === 'ApplicationSet' ? [[o.name, o.object as unknown] as const] : [])),
  );
}

function byAppSet(targets: readonly PlannedTarget[]): Map<string, PlannedTarget[]> {
  const out = new Map<string, PlannedTarget[]>();
  for (const t of targets) {
    const list = out.get(t.appSet);
    if (list) list.push(t);
    else out.set(t.appSet, [t]);
  }
  return out;
}

/** The appset's project, as the hub records it (a project the hub would refuse fails the plan). */
function projectOf(name: string, doc: unknown): string {
  const project = projectNameOf(doc);
  if ('error' in project)
    throw new Error(`ApplicationSet ${name}: ${project.path}: ${project.error} (the hub refuses it)`);
  return project.name;
}

/** The stored document's `spec.rollout` (a named strategy is already inlined), with step names. */
function rolloutOf(
  name: string,
  doc: unknown,
): { strategy: string | null; steps: { name: string; selector: LabelSelector }[] } | null {
  const spec = asObject(asObject(doc)?.['spec']);
  const raw = spec?.['rollout'];
  if (raw === undefined || raw === null) return null;
  const parsed = rolloutStrategySpecSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(
      `ApplicationSet ${name}: spec.rollout${issue && issue.path.length > 0 ? `.${issue.path.join('.')}` : ''}: ${issue?.message ?? 'invalid'} (the hub refuses it)`,
    );
  }
  const strategy = spec?.['rolloutStrategy'];
  return {
    strategy: typeof strategy === 'string' ? strategy : null,
    steps: parsed.data.steps.map((s, i) => ({ name: stepName(s, i), selector: s.selector })),
  };
}

function asObject(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
