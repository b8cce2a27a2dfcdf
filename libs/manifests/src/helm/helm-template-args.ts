/**
 * The Kubernetes version charts see when nothing else says which: the CLI's `--kube-version` default
 * and the hub's HELM_KUBE_VERSION default, one value so that both render alike.
 */
export const DEFAULT_KUBE_VERSION = '1.32.0';

/** What `.Capabilities` shows a chart: the cluster's Kubernetes version and served API versions. */
export interface Capabilities {
  /** `1.32.0` or `v1.32.0`. */
  kubeVersion: string;
  /** `group/version` and `group/version/Kind`, added to the ones Helm knows for that version. */
  apiVersions: string[];
}

/** Everything one `helm template` call needs, with files already resolved to local paths. */
export interface HelmTemplateInput {
  /** The chart directory (or packaged chart) as a local path. */
  chart: string;
  releaseName: string;
  namespace?: string;
  capabilities: Capabilities;
  /** Value files in order, already resolved (missing ones dropped when that is allowed). */
  valueFiles: string[];
  /** The file holding `helm.values` / `helm.valuesObject`, passed after the value files. */
  inlineValuesFile?: string;
  parameters: { name: string; value: string; forceString: boolean }[];
  /** `--set-file` entries with their resolved local paths. */
  fileParameters: { name: string; path: string }[];
  skipCrds: boolean;
  skipSchemaValidation: boolean;
  skipTests: boolean;
}

/**
 * The `helm template` arguments Argo CD's repo server passes (util/helm/cmd.go), in its order:
 * release name, namespace, kube version, `--set`, `--set-string`, `--set-file`, value files, the
 * inline values file, API versions, `--include-crds` unless skipped. Helm itself applies value files
 * first, then `--set`, `--set-string` and `--set-file`, whatever the order on the command line; that
 * is Argo CD's precedence too. Parameters with the same name keep the last one (Argo CD keeps them
 * in a map); they are passed sorted by name so that a render is repeatable.
 */
export function helmTemplateArgs(input: HelmTemplateInput): string[] {
  const args = ['template', input.releaseName, input.chart];
  if (input.namespace) args.push('--namespace', input.namespace);
  args.push('--kube-version', input.capabilities.kubeVersion);
  const set = new Map<string, string>();
  const setString = new Map<string, string>();
  for (const p of input.parameters) (p.forceString ? setString : set).set(p.name, p.value);
  for (const [name, value] of sortedEntries(set)) args.push('--set', `${name}=${escapeSetValue(value)}`);
  for (const [name, value] of sortedEntries(setString)) {
    args.push('--set-string', `${name}=${escapeSetValue(value)}`);
  }
  const setFile = new Map(input.fileParameters.map((p) => [p.name, p.path]));
  for (const [name, path] of sortedEntries(setFile))
    args.push('--set-file', `${name}=${escapeSetValue(path)}`);
  for (const file of input.valueFiles) args.push('--values', file);
  if (input.inlineValuesFile) args.push('--values', input.inlineValuesFile);
  for (const v of input.capabilities.apiVersions) args.push('--api-versions', v);
  if (!input.skipCrds) args.push('--include-crds');
  if (input.skipSchemaValidation) args.push('--skip-schema-validation');
  if (input.skipTests) args.push('--skip-tests');
  return args;
}

/**
 * Argo CD's cleanSetParameters: a comma in a `--set` value is data, not Helm's list separator, so it
 * is escaped (unless already escaped); a value written as a Helm list `{a,b}` is passed as it is.
 */
export function escapeSetValue(value: string): string {
  if (value.startsWith('{') && value.endsWith('}')) return value;
  let out = '';
  for (let i = 0; i < value.length; i++) {
    const c = value[i];
    out += c === ',' && (i === 0 || value[i - 1] !== '\\') ? '\\,' : c;
  }
  return out;
}

function sortedEntries(map: Map<string, string>): [string, string][] {
  return [...map.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}
