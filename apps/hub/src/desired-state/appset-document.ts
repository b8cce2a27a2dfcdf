import {
  applicationSetEnvelopeProblem,
  applicationSetNameProblem,
  GeneratorError,
  parseApplicationSet,
  type ApplicationSet,
} from '@flotilla/generators';
import {
  APPLICATION_SOURCE_FIELDS,
  HELM_OPTION_FIELDS,
  ManifestError,
  ociChartReference,
  parseApplicationSources,
  parseHelmOptions,
} from '@flotilla/manifests';
import { HubError } from '../common/hub-error.js';

export interface AppSetDocument {
  name: string;
  apiVersion: string;
  /** The document as submitted, kept verbatim so GET shows what people wrote. */
  document: Record<string, unknown>;
  parsed: ApplicationSet;
}

/** Validates a submitted ApplicationSet (Flotilla's or Argo CD's form) before anything is stored. */
export function readAppSetDocument(body: unknown): AppSetDocument {
  const envelope = applicationSetEnvelopeProblem(body);
  if (envelope) throw new HubError(400, 'invalid-appset', envelope.message, envelope.path);
  const doc = body as Record<string, unknown>;
  let parsed: ApplicationSet;
  try {
    parsed = parseApplicationSet(doc);
  } catch (e) {
    // Parsing refuses with `invalid-appset` or `unknown-generator`, the API's own codes.
    if (e instanceof GeneratorError) throw new HubError(400, e.code, e.message, e.path);
    throw e;
  }
  const name = parsed.metadata.name ?? '';
  const nameProblem = applicationSetNameProblem(name);
  if (nameProblem !== null) throw new HubError(400, 'invalid-appset', nameProblem, 'metadata.name');
  refuseUnrenderedSource(doc);
  return { name, apiVersion: parsed.apiVersion ?? 'flotilla.dev/v1alpha1', document: doc, parsed };
}

/**
 * Source fields of Argo CD that the hub's renderer does not honour yet. A source using one is
 * refused by name: rendered as plain YAML it would apply something other than what it says.
 */
export const UNRENDERED_SOURCE_FIELDS = {
  plugin: 'config management plugins are not supported',
} as const;

/** The first unsupported source field of a template source, as [field, why], or undefined. */
export function unrenderedSourceField(source: unknown): [string, string] | undefined {
  if (typeof source !== 'object' || source === null) return undefined;
  for (const [field, why] of Object.entries(UNRENDERED_SOURCE_FIELDS))
    if ((source as Record<string, unknown>)[field] !== undefined) return [field, why];
  return undefined;
}

function refuseUnrenderedSource(doc: Record<string, unknown>): void {
  const template = (doc['spec'] as { template?: { spec?: Record<string, unknown> } } | undefined)?.template;
  const spec = template?.spec;
  if (!spec) return;
  if (spec['sources'] !== undefined && spec['sources'] !== null) return checkSources(spec);
  const found = unrenderedSourceField(spec['source']);
  if (found)
    throw new HubError(
      400,
      'unsupported-source',
      `${found[1]}; refused rather than rendered as plain YAML`,
      `spec.template.spec.source.${found[0]}`,
    );
  const source = spec['source'] as Record<string, unknown> | undefined;
  checkChartSource(source, 'spec.template.spec.source');
  checkHelmOptions(source?.['helm'], 'spec.template.spec.source.helm');
}

/**
 * A multi-source template (`spec.sources`): each source is checked as a single one is, plus what
 * only the hub refuses (kustomize options in a multi-source application). Without templating the
 * list is checked whole, as an expansion will (refs declared once, `$ref/…` value files naming one);
 * a templated list is checked again per target at expansion.
 */
function checkSources(spec: Record<string, unknown>): void {
  const at = 'spec.template.spec.sources';
  if (spec['source'] !== undefined && spec['source'] !== null) {
    throw new HubError(400, 'invalid-appset', 'has both source and sources; give one of them', at);
  }
  const list = spec['sources'];
  if (!Array.isArray(list) || list.length === 0) {
    throw new HubError(400, 'invalid-appset', 'must be a non-empty list of sources', at);
  }
  list.forEach((item: unknown, i) => {
    const here = `${at}[${i}]`;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      throw new HubError(400, 'invalid-appset', 'must be a mapping (one source)', here);
    }
    const source = item as Record<string, unknown>;
    const refused = multiSourceRefusal(source);
    if (refused) throw new HubError(400, 'unsupported-source', refused[1], `${here}.${refused[0]}`);
    checkChartSource(source, here);
    checkHelmOptions(source['helm'], `${here}.helm`);
  });
  if (JSON.stringify(list).includes('{{')) return;
  try {
    parseApplicationSources({ sources: list }, 'spec.template.spec');
  } catch (e) {
    // The submission is refused as a whole (`invalid-appset`); helm options keep their own code,
    // which the lib and the API share. `path` and the message say which source and file.
    if (e instanceof ManifestError) {
      throw new HubError(
        400,
        e.code === 'invalid-helm-options' ? e.code : 'invalid-appset',
        e.message.slice(e.file.length + 2),
        e.file,
      );
    }
    throw e;
  }
}

/**
 * Why one source of a multi-source application is not rendered by the hub, as [field, why]: a field
 * Flotilla does not render, a field no source has, or kustomize (the hub builds kustomizations only
 * as single sources, where its remote-base and overlay checks run). Checked at submission and again
 * per target at expansion, with the template's parameters filled in.
 */
export function multiSourceRefusal(source: Record<string, unknown>): [string, string] | undefined {
  const unrendered = unrenderedSourceField(source);
  if (unrendered) return [unrendered[0], `${unrendered[1]}; refused rather than rendered as plain YAML`];
  const unknown = Object.keys(source).find((k) => !APPLICATION_SOURCE_FIELDS.includes(k));
  if (unknown !== undefined)
    return [unknown, `is not rendered by the hub (a source reads ${APPLICATION_SOURCE_FIELDS.join(', ')})`];
  if (source['kustomize'] !== undefined && source['kustomize'] !== null) {
    return [
      'kustomize',
      'kustomize in a multi-source application is not rendered by the hub yet; use a single source for a kustomization',
    ];
  }
  return undefined;
}

/** A chart from a Helm repository: no path, and an http(s) repository or an OCI registry. */
function checkChartSource(source: Record<string, unknown> | undefined, at: string): void {
  const chart = source?.['chart'];
  if (chart === undefined || chart === null || chart === '') return;
  if (typeof chart !== 'string') throw new HubError(400, 'invalid-appset', 'must be a string', `${at}.chart`);
  const path = source?.['path'];
  if (path !== undefined && path !== null && path !== '') {
    throw new HubError(
      400,
      'invalid-appset',
      'a chart from a Helm repository has no path (give chart or path, not both)',
      `${at}.path`,
    );
  }
  const url = source?.['repoURL'];
  if (typeof url !== 'string' || url.includes('{{')) return;
  const refused = chartRepositoryRefusal(url, chart.includes('{{') ? undefined : chart);
  if (refused) throw new HubError(400, 'invalid-appset', refused, `${at}.repoURL`);
}

/**
 * Why `url` cannot hold charts, or undefined: an http(s) Helm repository, or an OCI registry whose
 * reference to `chart` is well formed.
 */
export function chartRepositoryRefusal(url: string, chart: string | undefined): string | undefined {
  if (url.startsWith('oci://')) {
    try {
      ociChartReference(url, chart ?? 'chart', url);
      return undefined;
    } catch (e) {
      // Without the URL the ManifestError puts first: the refusal names repoURL itself.
      if (e instanceof ManifestError) return e.message.slice(e.file.length + 2);
      throw e;
    }
  }
  if (!/^https?:\/\//.test(url)) {
    return `"${url}" is not a Helm repository URL (https://, http:// or oci://)`;
  }
  return undefined;
}

/** An object that is a chart source: its repoURL is a Helm repository, not a Git one. */
/**
 * `source.helm` as submitted: a field Flotilla does not render is refused by name. A block without
 * templating is checked whole now; a templated one (`{{…}}`) is checked per target at expansion.
 */
function checkHelmOptions(helm: unknown, at: string): void {
  if (helm === undefined || helm === null) return;
  try {
    if (typeof helm === 'object' && !Array.isArray(helm) && JSON.stringify(helm).includes('{{')) {
      for (const key of Object.keys(helm)) {
        if (!(HELM_OPTION_FIELDS as readonly string[]).includes(key)) {
          throw new ManifestError(
            'invalid-helm-options',
            `${at}.${key}`,
            `is not supported (supported: ${HELM_OPTION_FIELDS.join(', ')})`,
          );
        }
      }
      return;
    }
    parseHelmOptions(helm, at);
  } catch (e) {
    if (e instanceof ManifestError) {
      throw new HubError(400, 'invalid-helm-options', e.message.slice(e.file.length + 2), e.file);
    }
    throw e;
  }
}
