import { parseAllDocuments } from 'yaml';

/**
 * Parses YAML or JSON data the way Argo CD's sigs.k8s.io/yaml does: YAML 1.1 scalars (`yes`/`no`/
 * `on`/`off` are booleans) but timestamps stay strings, as they do once converted to JSON.
 * Only the first document counts. Throws an Error with the line of the first problem.
 */
export function parseYamlData(text: string): unknown {
  const parsed = parseAllDocuments(text, {
    version: '1.1',
    customTags: (tags) =>
      tags.filter((t) => typeof t === 'object' && t.tag !== 'tag:yaml.org,2002:timestamp'),
    prettyErrors: true,
  });
  // Like go-yaml, only the first document counts.
  const doc = parsed[0];
  if (!doc) return null;
  const first = doc.errors[0];
  if (first) {
    const line = first.linePos?.[0].line;
    throw new Error(`${line ? `line ${line}: ` : ''}${first.message.split('\n')[0] ?? ''}`);
  }
  return doc.toJS({ maxAliasCount: 100 }) as unknown;
}
