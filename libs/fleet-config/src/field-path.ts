/** A path into a YAML document: map keys and sequence indexes. */
export type FieldPath = readonly (string | number)[];

/** `spec.steps[1].bakeTime`; the empty path is `(root)`. Keys that are not identifiers are quoted. */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`;
    else {
      const key = String(part);
      if (/^[A-Za-z_$][\w$-]*$/.test(key)) out += out ? `.${key}` : key;
      else out += `[${JSON.stringify(key)}]`;
    }
  }
  return out || '(root)';
}

/**
 * Parses the dotted form other libs put in their errors (`spec.generators[1].matrix`, `[0].schedule`)
 * back into segments, so that the line of the field can be found in the YAML.
 */
export function parsePath(text: string | undefined): (string | number)[] {
  if (text === undefined || text === '' || text === '(root)') return [];
  const out: (string | number)[] = [];
  const re = /([^.[\]]+)|\[(\d+)\]|\["((?:[^"\\]|\\.)*)"\]/g;
  for (const m of text.matchAll(re)) {
    if (m[1] !== undefined) out.push(m[1]);
    else if (m[2] !== undefined) out.push(Number(m[2]));
    else if (m[3] !== undefined) out.push(JSON.parse(`"${m[3]}"`) as string);
  }
  return out;
}
