import { unmetRequirements, type LooseLabelSelector, type UnmetRequirement } from '@flotilla/labels';
import { type ApplicationSet, type GeneratorKind } from './application-set.js';
import { generateStepwise } from './generate.js';
import { GeneratorError } from './generator-error.js';
import { flattenToStrings } from './params.js';
import { type ClusterInfo, type GenerateContext, type GeneratedTarget, type Params } from './types.js';

/** A target the generator gives the cluster: its name, parameters and what it would deploy. */
export interface ExplainedTarget {
  name: string;
  params: Params;
  source: Record<string, unknown>;
  destination: { name?: string; server?: string; namespace?: string };
}

/** A cluster-generator selector checked against the cluster's labels. */
export interface SelectorCheck {
  /** Field path of the selector (`spec.generators[0].clusters.selector`). */
  path: string;
  matched: boolean;
  unmet: UnmetRequirement[];
}

export interface GeneratorExplanation {
  index: number;
  /** `spec.generators[<index>]` */
  path: string;
  type: GeneratorKind;
  verdict: 'matched' | 'not-matched' | 'error';
  /** Why not (or the error), in words; empty when matched. */
  reasons: string[];
  /** Cluster selectors of this generator (itself, or its direct matrix/merge children). */
  selectors: SelectorCheck[];
  /** Parameter sets the generator produced, and how many its post-selector kept. */
  produced: number;
  kept: number;
  /** The targets it gives this cluster. */
  targets: ExplainedTarget[];
}

export interface Explanation {
  appSet: string;
  cluster: string;
  /** Whether any generator gives the cluster a target. */
  matched: boolean;
  generators: GeneratorExplanation[];
}

/**
 * Why an ApplicationSet gives (or does not give) `cluster` its targets, generator by generator, over
 * the same inputs as generate: which cluster selectors matched or which requirement failed, what the
 * post-selector dropped, and the parameters and source of each matching target. Never throws for a
 * generator error: it becomes that generator's verdict.
 */
export function explain(appSet: ApplicationSet, ctx: GenerateContext, cluster: ClusterInfo): Explanation {
  const generators = appSet.spec.generators.map((generator, index) =>
    explainGenerator(appSet, ctx, cluster, index, generator.kind),
  );
  return {
    appSet: appSet.metadata.name ?? '',
    cluster: cluster.name,
    matched: generators.some((g) => g.verdict === 'matched'),
    generators,
  };
}

function explainGenerator(
  appSet: ApplicationSet,
  ctx: GenerateContext,
  cluster: ClusterInfo,
  index: number,
  type: GeneratorKind,
): GeneratorExplanation {
  const path = `spec.generators[${index}]`;
  const generator = appSet.spec.generators[index];
  const selectors = generator ? clusterSelectors(generator, path, cluster) : [];
  const base = { index, path, type, selectors };
  let step;
  try {
    step = generateStepwise(appSet, ctx, index);
  } catch (e) {
    if (!(e instanceof GeneratorError)) throw e;
    return { ...base, verdict: 'error', reasons: [e.message], produced: 0, kept: 0, targets: [] };
  }
  const targets = step.targets.filter((t) => isFor(t, cluster)).map(explained);
  const counts = { produced: step.produced.length, kept: step.kept.length };
  if (targets.length > 0) return { ...base, ...counts, verdict: 'matched', reasons: [], targets };

  const reasons: string[] = [];
  for (const s of selectors.filter((x) => !x.matched)) {
    reasons.push(
      `cluster labels do not match ${s.path}: ${s.unmet.map((u) => `${u.requirement} (cluster has ${u.actual})`).join('; ')}`,
    );
  }
  // Parameter sets that would have reached the cluster but the post-selector dropped.
  const dropped = step.produced.filter((p) => !step.kept.includes(p));
  const droppedForCluster = dropped.filter((p) => {
    try {
      return isFor(step.render(p), cluster);
    } catch {
      return false;
    }
  });
  if (droppedForCluster.length > 0 && generator?.selector) {
    const unmet = unmetRequirements(generator.selector, flattenToStrings(droppedForCluster[0] ?? {}));
    reasons.push(
      `the post-selector ${path}.selector dropped ${droppedForCluster.length} parameter set(s) for this cluster: ${unmet
        .map((u) => `${u.requirement} (parameters have ${u.actual.replace(' label', ' parameter')})`)
        .join('; ')}`,
    );
  }
  if (reasons.length === 0) {
    const destinations = [
      ...new Set(
        step.targets.map(
          (t) => t.application.spec.destination.name || t.application.spec.destination.server || '?',
        ),
      ),
    ];
    reasons.push(
      step.kept.length === 0
        ? 'the generator produced no parameter sets'
        : `none of its ${step.kept.length} parameter set(s) renders a destination of cluster "${cluster.name}" (destinations: ${destinations.slice(0, 10).join(', ')}${destinations.length > 10 ? ', …' : ''})`,
    );
  }
  return { ...base, ...counts, verdict: 'not-matched', reasons, targets: [] };
}

/** The clusters-generator selectors of a generator: its own, or those of its direct children. */
function clusterSelectors(
  generator: Record<string, unknown>,
  path: string,
  cluster: ClusterInfo,
): SelectorCheck[] {
  const checks: SelectorCheck[] = [];
  const check = (clusters: unknown, at: string) => {
    const selector = (clusters as { selector?: LooseLabelSelector } | null)?.selector;
    const unmet = unmetRequirements(selector, cluster.labels);
    checks.push({ path: `${at}.clusters.selector`, matched: unmet.length === 0, unmet });
  };
  if (generator['clusters'] !== undefined) check(generator['clusters'], path);
  for (const kind of ['matrix', 'merge'] as const) {
    const children = (generator[kind] as { generators?: unknown[] } | undefined)?.generators ?? [];
    children.forEach((child, j) => {
      if (child && typeof child === 'object' && 'clusters' in child) {
        check((child as Record<string, unknown>)['clusters'], `${path}.${kind}.generators[${j}]`);
      }
    });
  }
  return checks;
}

function isFor(t: GeneratedTarget, cluster: ClusterInfo): boolean {
  const d = t.application.spec.destination;
  if (d.name) return d.name === cluster.name;
  // Exactly as the hub resolves a destination to a cluster.
  return !!d.server && d.server === cluster.server;
}

function explained(t: GeneratedTarget): ExplainedTarget {
  return {
    name: t.name,
    params: t.params,
    source: { ...t.application.spec.source },
    destination: { ...t.application.spec.destination },
  };
}
