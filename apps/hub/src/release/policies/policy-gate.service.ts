// Before a target's new bundle is released: the fleet's admission policies judge it, once per distinct bundle and scope.
import { Injectable } from '@nestjs/common';
import { systemActor, type PolicyDenial } from '@flotilla/contract';
import { canonicalJson } from '@flotilla/manifests';
import { gateBundle, type BundleVerdict, type PolicyViolation } from '@flotilla/policy';
import { AuditLog, type AuditEntry } from '../../audit/audit.service.js';
import { BreakGlassService } from '../../break-glass/break-glass.service.js';
import { asRecord, toJson } from '../../common/json.js';
import { Database } from '../../db/database.js';
import { Prisma } from '../../generated/prisma/client.js';
import { HubMetrics } from '../../metrics/hub-metrics.service.js';
import { AdmissionPolicies } from './admission-policies.service.js';

/** What the gate reads of a target. */
export interface GatedTarget {
  id: string;
  name: string;
  clusterId: string;
  namespace: string;
  desiredRevision: string;
  bundleDigest: string | null;
  policyDenial: Prisma.JsonValue | null;
}

/** What the gate reads of the appset. */
export interface GatedAppSet {
  name: string;
  project: string;
}

/**
 * Verdicts kept across expansions: a bundle shared by several appsets, or expanded again before it is
 * released, is not evaluated again. Past this many, the oldest are dropped (judged again if asked).
 */
const VERDICTS_KEPT = 2_000;

interface Judged {
  target: GatedTarget;
  clusterName: string;
  verdict: BundleVerdict;
}

/**
 * Judges the targets about to be released against the policies that apply to each (scoped by
 * project, appset and cluster labels): a target with a Deny keeps its released revision, and its
 * `policyDenial` says why (the reason PolicyDenied). Warn and Audit decisions are audited and do not
 * hold. A Deny of a policy or binding annotated `flotilla.dev/break-glass: allow` lets an active
 * break-glass through, audited; no other Deny is ever bypassed.
 */
@Injectable()
export class PolicyGate {
  /** (fleet policy revision, bundle, namespace, bindings) → the verdict, whatever target asked. */
  private readonly verdicts = new Map<string, BundleVerdict>();

  constructor(
    private readonly db: Database,
    private readonly audit: AuditLog,
    private readonly policies: AdmissionPolicies,
    private readonly breakGlass: BreakGlassService,
    private readonly metrics: HubMetrics,
  ) {}

  /**
   * Judges `behind` (targets whose bundle is not released yet) and clears the denial of the other
   * `targets` (the commit that was denied is no longer wanted). Returns the ids of the targets held.
   */
  async judge(
    appSet: GatedAppSet,
    targets: readonly GatedTarget[],
    behind: readonly GatedTarget[],
  ): Promise<Set<string>> {
    const behindIds = new Set(behind.map((t) => t.id));
    const stale = targets.filter((t) => t.policyDenial !== null && !behindIds.has(t.id)).map((t) => t.id);
    const judged = await this.evaluate(appSet, behind);
    const held = new Set<string>();
    const events: AuditEntry[] = [];
    const overrides = await this.breakGlass.activeFor(
      judged.map((j) => ({ name: j.target.name, clusterName: j.clusterName, appSetName: appSet.name })),
    );
    const denialOf = new Map<string, PolicyDenial | null>();
    for (const j of judged) {
      const breakGlass = overrides.get(j.target.name)?.[0];
      const bypassed = breakGlass ? j.verdict.denials.filter((d) => d.breakGlassAllowed) : [];
      const denials = j.verdict.denials.filter((d) => !bypassed.includes(d));
      const scope = `target:${j.target.name}`;
      const details = {
        appSet: appSet.name,
        revision: j.target.desiredRevision,
        digest: j.target.bundleDigest,
      };
      const first = denials[0];
      const denial = first ? denialFrom(j.target, first, denials.length) : null;
      denialOf.set(j.target.id, denial);
      if (denial) {
        held.add(j.target.id);
        // Audited when the denial is new: the same bundle judged again on the next expansion is not news.
        if (!sameDenial(j.target.policyDenial, denial))
          for (const d of denials) events.push(violationEvent('policy.denied', scope, details, d));
        continue;
      }
      for (const d of bypassed)
        events.push({
          ...violationEvent('policy.break-glass-bypass', scope, details, d),
          details: {
            ...details,
            ...violationDetails(d),
            breakGlass: breakGlass?.id,
            reason: breakGlass?.reason,
          },
        });
      for (const d of j.verdict.warnings) events.push(violationEvent('policy.warned', scope, details, d));
      for (const d of j.verdict.audits) events.push(violationEvent('policy.audited', scope, details, d));
    }
    await this.db.prisma.$transaction(async (tx) => {
      if (stale.length > 0)
        await tx.target.updateMany({ where: { id: { in: stale } }, data: { policyDenial: Prisma.DbNull } });
      for (const j of judged) {
        const denial = denialOf.get(j.target.id) ?? null;
        if (denial === null && j.target.policyDenial === null) continue;
        if (denial !== null && sameDenial(j.target.policyDenial, denial)) continue;
        await tx.target.update({
          where: { id: j.target.id },
          data: { policyDenial: denial === null ? Prisma.DbNull : toJson(denial) },
        });
      }
      if (events.length > 0) await this.audit.recordMany(events, tx);
    });
    return held;
  }

  /**
   * Every target's verdict, evaluated once per distinct (fleet policy revision, bundle, namespace,
   * bindings that apply), however many targets, clusters or expansions share it — counted by
   * `flotilla_policy_evaluations_total`. Break-glass is applied after, per target, so it is no part
   * of the key.
   */
  private async evaluate(appSet: GatedAppSet, targets: readonly GatedTarget[]): Promise<Judged[]> {
    const rendered = targets.filter((t) => t.bundleDigest !== null);
    if (rendered.length === 0) return [];
    const fleet = await this.policies.current();
    const clusters = await this.db.prisma.cluster.findMany({
      where: { id: { in: [...new Set(rendered.map((t) => t.clusterId))] } },
      select: { id: true, name: true, labels: true },
    });
    const clusterOf = new Map(clusters.map((c) => [c.id, c]));
    const bundles = new Map<string, unknown[]>();
    const judged: Judged[] = [];
    for (const target of rendered) {
      const cluster = clusterOf.get(target.clusterId);
      const scoped = AdmissionPolicies.forTarget(fleet, {
        project: appSet.project,
        appSet: appSet.name,
        clusterLabels: asRecord(cluster?.labels),
      });
      const digest = target.bundleDigest ?? '';
      const bindings = scoped.set.bindings.map((b) => b.name);
      const key = JSON.stringify([fleet.revision, digest, target.namespace, bindings]);
      let verdict = bindings.length === 0 ? ALLOWED : this.verdicts.get(key);
      if (!verdict) {
        this.metrics.policyEvaluations.inc();
        verdict = gateBundle(scoped.set, await this.manifestsOf(digest, bundles), {
          namespace: target.namespace,
          params: scoped.params,
        });
        this.remember(key, verdict);
      }
      judged.push({ target, clusterName: cluster?.name ?? '', verdict });
    }
    return judged;
  }

  private remember(key: string, verdict: BundleVerdict): void {
    this.verdicts.set(key, verdict);
    if (this.verdicts.size > VERDICTS_KEPT) this.verdicts.delete(this.verdicts.keys().next().value!);
  }

  private async manifestsOf(digest: string, cache: Map<string, unknown[]>): Promise<unknown[]> {
    const known = cache.get(digest);
    if (known) return known;
    const row = await this.db.prisma.bundle.findUnique({ where: { digest }, select: { manifests: true } });
    const manifests = Array.isArray(row?.manifests) ? (row.manifests as unknown[]) : [];
    cache.set(digest, manifests);
    return manifests;
  }
}

/** What no binding applies to: nothing to evaluate. */
const ALLOWED: BundleVerdict = Object.freeze({ allowed: true, denials: [], warnings: [], audits: [] });

function denialFrom(t: GatedTarget, d: PolicyViolation, count: number): PolicyDenial {
  return {
    digest: t.bundleDigest ?? '',
    revision: t.desiredRevision,
    policy: d.policy,
    binding: d.binding,
    object: d.object,
    message: d.message,
    denials: count,
  };
}

function sameDenial(stored: Prisma.JsonValue | null, next: PolicyDenial): boolean {
  // JSONB stores keys in its own order: compared canonically.
  return stored !== null && canonicalJson(stored) === canonicalJson(next);
}

function violationDetails(d: PolicyViolation): Record<string, unknown> {
  return { policy: d.policy, binding: d.binding, object: d.object, action: d.action, message: d.message };
}

function violationEvent(
  action: string,
  scope: string,
  details: Record<string, unknown>,
  d: PolicyViolation,
): AuditEntry {
  return {
    actor: systemActor('policy-gate'),
    action,
    scope,
    details: { ...details, ...violationDetails(d) },
  };
}
