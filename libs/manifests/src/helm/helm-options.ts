import { ManifestError } from '../manifest-error.js';

/** One `helm.parameters` entry: `--set name=value`, or `--set-string` with `forceString`. */
export interface HelmParameter {
  name: string;
  value: string;
  forceString: boolean;
}

/** One `helm.fileParameters` entry: `--set-file name=<path>`, the path relative to the chart. */
export interface HelmFileParameter {
  name: string;
  path: string;
}

/**
 * Argo CD's `spec.source.helm`, checked and normalised (absent fields take Argo CD's defaults).
 * The meaning of each field is Argo CD's; see docs/desired-state.md.
 */
export interface HelmOptions {
  releaseName?: string;
  valueFiles: string[];
  ignoreMissingValueFiles: boolean;
  /** `valuesObject` when given (it wins over `values`, as in Argo CD), else `values` parsed. */
  values?: string;
  parameters: HelmParameter[];
  fileParameters: HelmFileParameter[];
  skipCrds: boolean;
  skipSchemaValidation: boolean;
  skipTests: boolean;
  namespace?: string;
  kubeVersion?: string;
  apiVersions?: string[];
  passCredentials: boolean;
}

/** The `source.helm` fields Flotilla renders, as Argo CD names them. */
export const HELM_OPTION_FIELDS = [
  'releaseName',
  'valueFiles',
  'ignoreMissingValueFiles',
  'values',
  'valuesObject',
  'parameters',
  'fileParameters',
  'skipCrds',
  'skipSchemaValidation',
  'skipTests',
  'namespace',
  'kubeVersion',
  'apiVersions',
  'passCredentials',
  'version',
] as const;
const FIELDS = HELM_OPTION_FIELDS;

const fail = (at: string, message: string): never => {
  throw new ManifestError('invalid-helm-options', at, message);
};

/**
 * Validates Argo CD's `source.helm` block. `at` is the field path used in errors. A field Flotilla
 * does not support is refused by name, never ignored: a chart must not render differently from what
 * its author asked for.
 */
export function parseHelmOptions(raw: unknown, at = 'spec.source.helm'): HelmOptions {
  const out: HelmOptions = {
    valueFiles: [],
    ignoreMissingValueFiles: false,
    parameters: [],
    fileParameters: [],
    skipCrds: false,
    skipSchemaValidation: false,
    skipTests: false,
    passCredentials: false,
  };
  if (raw === undefined || raw === null) return out;
  if (typeof raw !== 'object' || Array.isArray(raw)) return fail(at, 'must be a mapping');
  const input = raw as Record<string, unknown>;
  for (const key of Object.keys(input)) {
    if (!(FIELDS as readonly string[]).includes(key)) {
      fail(`${at}.${key}`, `is not supported (supported: ${FIELDS.join(', ')})`);
    }
  }
  const str = (key: string): string | undefined => {
    const v = input[key];
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'string') return fail(`${at}.${key}`, 'must be a string');
    return v === '' ? undefined : v;
  };
  const bool = (key: string): boolean => {
    const v = input[key];
    if (v === undefined || v === null) return false;
    if (typeof v !== 'boolean') return fail(`${at}.${key}`, 'must be true or false');
    return v;
  };
  const strings = (key: string): string[] | undefined => {
    const v = input[key];
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v)) return fail(`${at}.${key}`, 'must be a list of strings');
    return v.map((item, i) =>
      typeof item === 'string' ? item : fail(`${at}.${key}[${i}]`, 'must be a string'),
    );
  };

  const version = str('version');
  // Argo CD picks Helm 2 or 3 with it; Flotilla runs one Helm, which renders as v3 does.
  if (version !== undefined && version !== 'v3') {
    fail(`${at}.version`, `"${version}" is not supported (Flotilla renders with Helm 3 semantics: "v3")`);
  }
  const releaseName = str('releaseName');
  if (releaseName !== undefined) out.releaseName = releaseName;
  const namespace = str('namespace');
  if (namespace !== undefined) out.namespace = namespace;
  const kubeVersion = str('kubeVersion');
  if (kubeVersion !== undefined) {
    if (!/^v?\d+\.\d+(\.\d+)?([-+].*)?$/.test(kubeVersion)) {
      fail(`${at}.kubeVersion`, `"${kubeVersion}" is not a Kubernetes version such as 1.32 or 1.32.0`);
    }
    out.kubeVersion = kubeVersion;
  }
  const apiVersions = strings('apiVersions');
  if (apiVersions !== undefined && apiVersions.length > 0) out.apiVersions = apiVersions;
  out.valueFiles = (strings('valueFiles') ?? []).filter((f) => f !== '');
  out.ignoreMissingValueFiles = bool('ignoreMissingValueFiles');
  out.skipCrds = bool('skipCrds');
  out.skipSchemaValidation = bool('skipSchemaValidation');
  out.skipTests = bool('skipTests');
  out.passCredentials = bool('passCredentials');

  const valuesObject = input['valuesObject'];
  if (valuesObject !== undefined && valuesObject !== null) {
    if (typeof valuesObject !== 'object' || Array.isArray(valuesObject)) {
      fail(`${at}.valuesObject`, 'must be a mapping');
    }
    // JSON is YAML: Helm reads it as a values file.
    if (Object.keys(valuesObject).length > 0) out.values = JSON.stringify(valuesObject);
  } else {
    const values = input['values'];
    if (typeof values === 'string') {
      if (values.trim() !== '') out.values = values;
    } else if (values !== undefined && values !== null) {
      // Older Argo CD manifests carry values as a mapping; Argo CD reads it the same way.
      if (typeof values !== 'object' || Array.isArray(values)) {
        fail(`${at}.values`, 'must be a YAML string (or use valuesObject for a mapping)');
      }
      if (Object.keys(values).length > 0) out.values = JSON.stringify(values);
    }
  }

  const parameters = input['parameters'];
  if (parameters !== undefined && parameters !== null) {
    if (!Array.isArray(parameters)) fail(`${at}.parameters`, 'must be a list of {name, value, forceString}');
    out.parameters = (parameters as unknown[]).map((p, i): HelmParameter => {
      const where = `${at}.parameters[${i}]`;
      if (typeof p !== 'object' || p === null || Array.isArray(p)) return fail(where, 'must be a mapping');
      const e = p as Record<string, unknown>;
      for (const k of Object.keys(e)) {
        if (!['name', 'value', 'forceString'].includes(k)) {
          fail(`${where}.${k}`, 'is not supported (supported: name, value, forceString)');
        }
      }
      if (typeof e['name'] !== 'string' || e['name'] === '')
        fail(`${where}.name`, 'must be a non-empty string');
      const raw = e['value'];
      // A YAML author writes `value: 3` or `value: true`; Argo CD's CRD types it as a string.
      let value = '';
      if (typeof raw === 'string') value = raw;
      else if (typeof raw === 'number' || typeof raw === 'boolean') value = String(raw);
      else if (raw !== undefined && raw !== null) fail(`${where}.value`, 'must be a string');
      const forceString = e['forceString'];
      if (forceString !== undefined && forceString !== null && typeof forceString !== 'boolean') {
        fail(`${where}.forceString`, 'must be true or false');
      }
      return {
        name: e['name'] as string,
        value,
        forceString: forceString === true,
      };
    });
  }

  const fileParameters = input['fileParameters'];
  if (fileParameters !== undefined && fileParameters !== null) {
    if (!Array.isArray(fileParameters)) fail(`${at}.fileParameters`, 'must be a list of {name, path}');
    out.fileParameters = (fileParameters as unknown[]).map((p, i): HelmFileParameter => {
      const where = `${at}.fileParameters[${i}]`;
      if (typeof p !== 'object' || p === null || Array.isArray(p)) return fail(where, 'must be a mapping');
      const e = p as Record<string, unknown>;
      for (const k of Object.keys(e)) {
        if (!['name', 'path'].includes(k)) fail(`${where}.${k}`, 'is not supported (supported: name, path)');
      }
      if (typeof e['name'] !== 'string' || e['name'] === '')
        fail(`${where}.name`, 'must be a non-empty string');
      if (typeof e['path'] !== 'string' || e['path'] === '')
        fail(`${where}.path`, 'must be a non-empty string');
      return { name: e['name'] as string, path: e['path'] as string };
    });
  }
  return out;
}
