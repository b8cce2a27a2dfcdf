import type { HelmOptions } from './helm-options.js';

/**
 * Argo CD's build environment: the variables it substitutes in Helm parameter values, value file
 * paths and file parameter paths (`$ARGOCD_APP_NAME`, `${KUBE_VERSION}`, …) before running Helm.
 */
export interface BuildEnvironment {
  ARGOCD_APP_NAME: string;
  ARGOCD_APP_NAMESPACE: string;
  ARGOCD_APP_PROJECT_NAME: string;
  ARGOCD_APP_REVISION: string;
  ARGOCD_APP_REVISION_SHORT: string;
  ARGOCD_APP_SOURCE_REPO_URL: string;
  ARGOCD_APP_SOURCE_PATH: string;
  ARGOCD_APP_SOURCE_TARGET_REVISION: string;
  KUBE_VERSION: string;
  KUBE_API_VERSIONS: string;
}

const SPECIAL = new Set([
  '*',
  '#',
  '$',
  '@',
  '!',
  '?',
  '-',
  '0',
  '1',
  '2',
  '3',
  '4',
  '5',
  '6',
  '7',
  '8',
  '9',
]);
const NAME_CHAR = /[A-Za-z0-9_]/;

/**
 * Go's os.Expand with Argo CD's mapping (util/app/v1alpha1 Env.Envsubst): `$NAME` and `${NAME}` are
 * replaced by the variable, an unknown one by nothing; `$$` is a `$`; a `$` followed by neither a
 * name nor a brace stays; `${}` and an unclosed `${` are dropped, as Go drops them.
 */
export function envsubst(text: string, env: Partial<BuildEnvironment>): string {
  const lookup = (name: string): string =>
    name === '$' ? '$' : ((env as Record<string, string | undefined>)[name] ?? '');
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    if (c !== '$' || i + 1 >= text.length) {
      out += c;
      i++;
      continue;
    }
    const rest = text.slice(i + 1);
    if (rest[0] === '{') {
      if (rest.length > 2 && SPECIAL.has(rest[1] as string) && rest[2] === '}') {
        out += lookup(rest[1] as string);
        i += 4;
        continue;
      }
      const close = rest.indexOf('}');
      if (close === 1)
        i += 3; // `${}`: bad syntax, eaten
      else if (close < 0)
        i += 2; // `${` unclosed: eaten
      else {
        out += lookup(rest.slice(1, close));
        i += close + 2;
      }
      continue;
    }
    if (SPECIAL.has(rest[0] as string)) {
      out += lookup(rest[0] as string);
      i += 2;
      continue;
    }
    let n = 0;
    while (n < rest.length && NAME_CHAR.test(rest[n] as string)) n++;
    if (n === 0) {
      out += '$';
      i++;
      continue;
    }
    out += lookup(rest.slice(0, n));
    i += n + 1;
  }
  return out;
}

/** The Application fields a chart's render can read. */
export interface HelmApplication {
  name: string;
  namespace?: string;
  project?: string;
}

/**
 * The part of `app` that can change what `helm template` renders with these options: the name is
 * the default release name, the namespace the default `--namespace`, and any of them can reach a
 * parameter, value file or file parameter through `$ARGOCD_APP_*`. Targets that agree on the rest
 * share one render, however their Applications are named.
 */
export function helmApplicationInputs(helm: HelmOptions, app: HelmApplication): HelmApplication {
  const substituted = [
    ...helm.parameters.map((p) => p.value),
    ...helm.valueFiles,
    ...helm.fileParameters.map((p) => p.path),
  ].some((s) => s.includes('$'));
  if (substituted) return app;
  const out: HelmApplication = { name: helm.releaseName === undefined ? app.name : '' };
  if (helm.namespace === undefined && app.namespace !== undefined) out.namespace = app.namespace;
  return out;
}
