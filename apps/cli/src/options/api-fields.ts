/**
 * The hub names the offending field of a refused request by its API path (`appSet`,
 * `spec.destinations[0].namespace`); the person typed a flag (`--appset`, `--destination`). Each
 * command spec says which of its flags fills which API field, and a refusal is reworded in the
 * flag's name — unless the field came from a file (`-f`): then it keeps its path, the file's words.
 * A missing field is named by its flag too, when the request was built from flags.
 */

/** API field path (or the path of a list or object the flag fills) → the flag's long name. */
export type ApiFieldFlags = Readonly<Record<string, string>>;

/**
 * The flag that set `path`: the entry for the path itself, else for the nearest enclosing field
 * (`clusters[1]` is `clusters`'s, `spec.destinations[0].namespace` is `spec.destinations`'s).
 * Undefined when no flag fills it, or `named(flag)` says the flag is not how the field was given.
 */
export function flagOfPath(
  path: string | undefined,
  flags: ApiFieldFlags | undefined,
  named: (flag: string) => boolean,
): string | undefined {
  if (path === undefined || flags === undefined) return undefined;
  for (let prefix = path; prefix !== ''; prefix = enclosing(prefix)) {
    const flag = flags[prefix];
    if (flag !== undefined) return named(flag) ? flag : undefined;
  }
  return undefined;
}

/** `a.b[2].c` → `a.b[2]` → `a.b` → `a` → ``. */
function enclosing(path: string): string {
  const cut = Math.max(path.lastIndexOf('.'), path.lastIndexOf('['));
  return cut <= 0 ? '' : path.slice(0, cut);
}

/**
 * The hub's message with the field named as the flag: `invalid request body: timeZone: …` becomes
 * `invalid request body: --time-zone: …`, and the path is kept at the end for whoever reads the
 * hub's own documentation (`(--time-zone; API field timeZone)`).
 */
export function inFlagWords(message: string, path: string, flag: string): string {
  const named = message.includes(`${path}:`)
    ? message.replace(`${path}:`, `--${flag}:`)
    : `--${flag}: ${message}`;
  return `${named} (--${flag}; API field ${path})`;
}
