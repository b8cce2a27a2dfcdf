import { type ApplicationSet, type ApplicationTemplate } from './application-set.js';
import { GeneratorError } from './generator-error.js';
import { deepClone, isPlainObject, mergePatch } from './params.js';
import { renderDeep, renderString, type TemplateMode } from './render-string.js';
import { type GeneratedApplication, type Params } from './types.js';
import { parseYamlData } from './yaml-data.js';

export const RESOURCES_FINALIZER = 'resources-finalizer.argocd.argoproj.io';

/**
 * Renders the Application for one parameter set, as Argo CD's RenderTemplateParams + templatePatch:
 * every string (and map key) templated; the resources finalizer added unless the template sets
 * finalizers or the ApplicationSet preserves resources on deletion; the namespace forced to the
 * ApplicationSet's own (when it has one).
 */
export function renderApplication(
  template: ApplicationTemplate,
  params: Params,
  appSet: ApplicationSet,
  path: string,
): GeneratedApplication {
  const mode: TemplateMode = appSet.spec;
  // Argo CD returns the template untouched for an empty parameter set (no finalizer either).
  if (Object.keys(params).length === 0) return finish(deepClone(template), appSet);
  let app: Record<string, unknown>;
  try {
    app = renderDeep(template, params, mode) as Record<string, unknown>;
  } catch (err) {
    throw GeneratorError.wrap(err, 'template-execute', path);
  }
  const metadata = isPlainObject(app['metadata']) ? app['metadata'] : {};
  app['metadata'] = metadata;
  const finalizers = metadata['finalizers'];
  if (
    !appSet.spec.syncPolicy?.preserveResourcesOnDeletion &&
    !(Array.isArray(finalizers) && finalizers.length > 0)
  ) {
    metadata['finalizers'] = [RESOURCES_FINALIZER];
  }
  if (appSet.spec.templatePatch !== undefined) app = applyTemplatePatch(app, params, appSet);
  return finish(app, appSet);
}

function applyTemplatePatch(
  app: Record<string, unknown>,
  params: Params,
  appSet: ApplicationSet,
): Record<string, unknown> {
  const source = appSet.spec.templatePatch ?? '';
  let rendered: string;
  try {
    rendered = renderString(source, params, appSet.spec);
  } catch (err) {
    throw GeneratorError.wrap(err, 'template-execute', 'spec.templatePatch');
  }
  let patch: unknown;
  try {
    patch = parseYamlData(rendered);
  } catch (err) {
    throw new GeneratorError(
      'template-execute',
      `the rendered patch is not YAML/JSON (${(err as Error).message}):\n${rendered}`,
      'spec.templatePatch',
    );
  }
  if (patch == null) return app;
  if (!isPlainObject(patch)) {
    throw new GeneratorError(
      'template-execute',
      'the rendered patch must be an object',
      'spec.templatePatch',
    );
  }
  const spec = app['spec'];
  const project = isPlainObject(spec) ? spec['project'] : undefined;
  const patched = mergePatch(app, patch) as Record<string, unknown>;
  // Argo CD does not let a patch move an Application to another project (RBAC is checked on the template's).
  const patchedSpec = patched['spec'];
  if (isPlainObject(patchedSpec)) {
    if (project === undefined) delete patchedSpec['project'];
    else patchedSpec['project'] = project;
  }
  return patched;
}

function finish(app: Record<string, unknown>, appSet: ApplicationSet): GeneratedApplication {
  const { name, namespace, ...rest } = isPlainObject(app['metadata']) ? app['metadata'] : {};
  // The Application lives in its ApplicationSet's namespace (Argo CD's appsets-in-any-namespace boundary).
  const ns = appSet.metadata.namespace || namespace;
  app['metadata'] = {
    name: typeof name === 'string' ? name : '',
    ...(ns !== undefined && { namespace: ns }),
    ...rest,
  };
  if (!isPlainObject(app['spec'])) app['spec'] = {};
  return app as unknown as GeneratedApplication;
}
