/**
 * The Git repositories an ApplicationSet document names literally (git generators, template
 * sources), read before generation: which mirrors to keep, which refs to track, where a URL was
 * written for an error to point at. A templated URL (`{{…}}`) is known only after generation, and a
 * chart source's `repoURL` is a Helm repository, not Git.
 */

/** A source whose `chart` names a Helm chart: its repoURL is a chart repository. */
export function isChartSource(o: Record<string, unknown>): boolean {
  return typeof o['chart'] === 'string' && o['chart'] !== '';
}

/**
 * Git repository URLs written literally anywhere in the document (git generators, template source;
 * a chart source's Helm repository is not one), each with the revisions it is read at. Templated URLs (`{{…}}`) are only known after generation.
 */
export function literalRepoRefs(document: unknown): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const walk = (v: unknown): void => {
    if (Array.isArray(v)) return v.forEach(walk);
    if (typeof v !== 'object' || v === null) return;
    const o = v as Record<string, unknown>;
    const url = o['repoURL'];
    if (typeof url === 'string' && url !== '' && !url.includes('{{') && !isChartSource(o)) {
      const rev = o['revision'] ?? o['targetRevision'];
      const ref = typeof rev === 'string' && rev !== '' && !rev.includes('{{') ? rev : 'HEAD';
      const refs = out.get(url) ?? new Set<string>();
      refs.add(ref);
      out.set(url, refs);
    }
    Object.values(o).forEach(walk);
  };
  walk(document);
  return out;
}

/** Where each literal repository URL of the document is first written (`spec.template.spec.source.repoURL`). */
export function literalRepoUrlPaths(document: unknown): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (v: unknown, path: string): void => {
    if (Array.isArray(v)) return v.forEach((x, i) => walk(x, `${path}[${i}]`));
    if (typeof v !== 'object' || v === null) return;
    const chart = isChartSource(v as Record<string, unknown>);
    for (const [k, x] of Object.entries(v)) {
      const at = path ? `${path}.${k}` : k;
      if (k === 'repoURL' && !chart && typeof x === 'string' && !x.includes('{{') && !out.has(x))
        out.set(x, at);
      walk(x, at);
    }
  };
  walk(document, '');
  return out;
}
