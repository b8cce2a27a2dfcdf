// The fleet's admission policies, compiled once per fleet revision, for the release gate and the assignments.
import { Injectable } from '@nestjs/common';
import {
  compilePolicySet,
  formatPolicyPath,
  isPolicyDocument,
  scopedPolicySet,
  type PolicySet,
  type TargetScope,
} from '@flotilla/policy';
import { HubError } from '../../common/hub-error.js';
import { Database } from '../../db/database.js';
import { HubMetrics } from '../../metrics/hub-metrics.service.js';

/** The compiled set and what it was compiled from. */
export interface FleetPolicySet {
  /** Which stored rows it was compiled from: a verdict judged under one revision holds for it alone. */
  revision: string;
  set: PolicySet;
  /** Params objects (ConfigMaps, or the kinds a paramKind names). */
  params: unknown[];
  /** Every policy and binding as written, by name: what an assignment carries. */
  policyDocuments: ReadonlyMap<string, unknown>;
  bindingDocuments: ReadonlyMap<string, unknown>;
}

/** What one target's assignment carries: the policies, bindings and params that apply to it. */
export interface TargetPolicies {
  set: PolicySet;
  documents: unknown[];
  params: unknown[];
}

const EMPTY: FleetPolicySet = {
  revision: '',
  set: { policies: new Map(), bindings: [] },
  params: [],
  policyDocuments: new Map(),
  bindingDocuments: new Map(),
};

/**
 * Reads the AdmissionPolicyObject rows (written by fleet-repo/ with each fleet commit) and compiles
 * them once: the compiled set is kept until a row changes, so judging a thousand targets parses no
 * expression twice (counted by `flotilla_policy_set_compilations_total`). Callers asking while it
 * compiles share that compilation. Every fleet commit was validated, so a set that no longer compiles (a hub upgrade
 * that reads CEL differently) fails the caller loudly instead of gating with fewer policies.
 */
@Injectable()
export class AdmissionPolicies {
  private cached: { key: string; value: Promise<FleetPolicySet> } | null = null;

  constructor(
    private readonly db: Database,
    private readonly metrics: HubMetrics,
  ) {}

  async current(): Promise<FleetPolicySet> {
    const stamps = await this.db.prisma.admissionPolicyObject.findMany({
      select: { id: true, updatedAt: true },
      orderBy: { id: 'asc' },
    });
    if (stamps.length === 0) return EMPTY;
    const key = stamps.map((s) => `${s.id}@${s.updatedAt.getTime()}`).join(',');
    if (this.cached?.key === key) return this.cached.value;
    const value = this.compile(key);
    this.cached = { key, value };
    // A failed compilation is not kept: the next caller tries again (and fails loudly again).
    value.catch(() => {
      if (this.cached?.value === value) this.cached = null;
    });
    return value;
  }

  private async compile(revision: string): Promise<FleetPolicySet> {
    this.metrics.policyCompilations.inc();
    const rows = await this.db.prisma.admissionPolicyObject.findMany({ orderBy: { id: 'asc' } });
    const documents = rows.map((r) => r.document as unknown);
    const { set, errors } = compilePolicySet(documents);
    const first = errors[0];
    if (first) {
      const row = rows[first.document];
      throw new HubError(
        500,
        'policy-not-compiled',
        `${first.kind} ${first.name ?? ''} (${row?.sourceFile ?? '?'}) no longer compiles at ${formatPolicyPath(first.path)}: ${first.message}; nothing is released until its fleet repository fixes it`,
      );
    }
    const byName = (kind: string) =>
      new Map(
        rows
          .filter((r) => r.kind === kind && isPolicyDocument(r.document))
          .map((r) => [r.name, r.document as unknown]),
      );
    return {
      revision,
      set,
      params: rows.filter((r) => !isPolicyDocument(r.document)).map((r) => r.document as unknown),
      policyDocuments: byName('ValidatingAdmissionPolicy'),
      bindingDocuments: byName('ValidatingAdmissionPolicyBinding'),
    };
  }

  /** The part of the fleet's set that applies to one target, and the documents it is made of. */
  static forTarget(fleet: FleetPolicySet, target: TargetScope): TargetPolicies {
    const set = scopedPolicySet(fleet.set, target);
    const policyNames = [...new Set(set.bindings.map((b) => b.policyName))].sort();
    const documents = [
      ...policyNames.map((n) => fleet.policyDocuments.get(n)),
      ...set.bindings.map((b) => fleet.bindingDocuments.get(b.name)),
    ].filter((d) => d !== undefined);
    return { set, documents, params: set.bindings.length > 0 ? fleet.params : [] };
  }
}
