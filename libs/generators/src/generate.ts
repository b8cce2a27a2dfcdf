import { type ApplicationSet, type GeneratorSpec, parseGenerator } from './application-set.js';
import { GeneratorError } from './generator-error.js';
import { type GeneratorEnv } from './generators/generator-env.js';
import { clustersGenerator } from './generators/clusters.generator.js';
import { gitGenerator } from './generators/git.generator.js';
import { listGenerator } from './generators/list.generator.js';
import { matrixGenerator } from './generators/matrix.generator.js';
import { mergeGenerator } from './generators/merge.generator.js';
import { selectorMatcher } from './selector-matcher.js';
import { flattenToStrings, mergeFill } from './params.js';
import { renderApplication } from './render-application.js';
import { renderDeep } from './render-string.js';
import { type GenerateContext, type GenerateResult, type GeneratedTarget, type Params } from './types.js';

/**
 * Runs every generator of the ApplicationSet and renders one Application per parameter set.
 * Generators run in order; each one's post-selector filters its own output. Throws GeneratorError.
 */
export function generate(appSet: ApplicationSet, ctx: GenerateContext): GenerateResult {
  const env = generatorEnv(appSet, ctx);
  const params: Params[] = [];
  const targets: GeneratedTarget[] = [];
  appSet.spec.generators.forEach((generator, i) => {
    const path = `spec.generators[${i}]`;
    const generated = runGenerator(generator, env, path, 0);
    // A generator-level template overrides the spec-level one field by field.
    const ownTemplate = bodyOf(generator).template ?? {};
    const template = mergeFill(ownTemplate, appSet.spec.template) as typeof ownTemplate;
    for (const p of generated) {
      const application = renderApplication(template, p, appSet, path);
      params.push(p);
      targets.push({ name: application.metadata.name, params: p, application });
    }
  });
  return { params, targets };
}

/** Target names that occur more than once (the hub refuses them; the offline preview shows them). */
export function findDuplicateTargetNames(targets: GeneratedTarget[]): string[] {
  const seen = new Set<string>();
  const dup = new Set<string>();
  for (const t of targets) (seen.has(t.name) ? dup : seen).add(t.name);
  return [...dup].sort();
}

function generatorEnv(appSet: ApplicationSet, ctx: GenerateContext): GeneratorEnv {
  const env: GeneratorEnv = {
    goTemplate: appSet.spec.goTemplate,
    goTemplateOptions: appSet.spec.goTemplateOptions,
    applyNestedSelectors: appSet.spec.applyNestedSelectors,
    ctx,
    runChild: (raw, path, depth, inherited) => runChild(raw, env, path, depth, inherited),
  };
  return env;
}

/**
 * One top-level generator, step by step, for explain: its parameter sets before and after its
 * post-selector, and the Application each kept set renders to (same code path as generate).
 */
export function generateStepwise(
  appSet: ApplicationSet,
  ctx: GenerateContext,
  index: number,
): {
  produced: Params[];
  kept: Params[];
  targets: GeneratedTarget[];
  render: (p: Params) => GeneratedTarget;
} {
  const env = generatorEnv(appSet, ctx);
  const generator = appSet.spec.generators[index];
  if (!generator)
    throw new GeneratorError('invalid-appset', 'no such generator', `spec.generators[${index}]`);
  const path = `spec.generators[${index}]`;
  const produced = produce(generator, env, path, 0);
  const kept = postSelect(produced, generator.selector, path);
  const template = mergeFill(
    bodyOf(generator).template ?? {},
    appSet.spec.template,
  ) as ApplicationSet['spec']['template'];
  const render = (p: Params): GeneratedTarget => {
    const application = renderApplication(template, p, appSet, path);
    return { name: application.metadata.name, params: p, application };
  };
  return { produced, kept, targets: kept.map(render), render };
}

/** Runs one validated generator and applies its post-selector. */
function runGenerator(generator: GeneratorSpec, env: GeneratorEnv, path: string, depth: number): Params[] {
  return postSelect(produce(generator, env, path, depth), generator.selector, path);
}

/**
 * Runs a matrix/merge child given as written. When the first matrix child's parameters are given,
 * every string of the child is templated with them first (Argo CD's InterpolateGenerator); the
 * post-selector stays the one written, not the interpolated one.
 */
function runChild(
  raw: unknown,
  env: GeneratorEnv,
  path: string,
  depth: number,
  inherited?: Params,
): Params[] {
  const written = parseGenerator(raw, path, depth);
  // Children of a nested matrix/merge lose their selectors unless the ApplicationSet opts in (Argo CD #11982).
  if (depth >= 2 && !env.applyNestedSelectors) delete written.selector;
  if (inherited === undefined || Object.keys(inherited).length === 0)
    return runGenerator(written, env, path, depth);
  let interpolated: GeneratorSpec;
  try {
    interpolated = parseGenerator(renderDeep(raw, inherited, env), path, depth);
  } catch (err) {
    throw GeneratorError.wrap(err, 'template-execute', path);
  }
  return postSelect(produce(interpolated, env, path, depth), written.selector, path);
}

/** A post-selector matches the flattened params, each value printed with Go's `%v`. */
function postSelect(params: Params[], selector: GeneratorSpec['selector'], path: string): Params[] {
  if (selector == null) return params;
  const matches = selectorMatcher(selector, `${path}.selector`);
  return params.filter((p) => matches(flattenToStrings(p)));
}

function produce(generator: GeneratorSpec, env: GeneratorEnv, path: string, depth: number): Params[] {
  switch (generator.kind) {
    case 'list':
      return listGenerator(generator.list, env, `${path}.list`);
    case 'clusters':
      return clustersGenerator(generator.clusters, env, `${path}.clusters`);
    case 'git':
      return gitGenerator(generator.git, env, `${path}.git`);
    case 'matrix':
      return matrixGenerator(generator.matrix, env, `${path}.matrix`, depth);
    case 'merge':
      return mergeGenerator(generator.merge, env, `${path}.merge`, depth);
  }
}

function bodyOf(generator: GeneratorSpec): { template?: ApplicationSet['spec']['template'] } {
  switch (generator.kind) {
    case 'list':
      return generator.list;
    case 'clusters':
      return generator.clusters;
    case 'git':
      return generator.git;
    case 'matrix':
      return generator.matrix;
    case 'merge':
      return generator.merge;
  }
}
