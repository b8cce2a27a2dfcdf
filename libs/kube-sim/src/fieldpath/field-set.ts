/**
 * A set of field paths (structured-merge-diff's fieldpath.Set) with the FieldsV1 encoding of
 * managedFields. A path is a list of path elements in their serialised form:
 * `f:<field>`, `k:<json of key fields>`, `v:<json value>` or `i:<index>`.
 */
export type PathElements = readonly string[];

/**
 * The map key of a path: its elements joined by a character no element contains (field names,
 * and keys and values in JSON text, where control characters are escaped).
 */
export const PATH_SEPARATOR = '\u0000';
export const pathKey = (pes: PathElements): string => pes.join(PATH_SEPARATOR);

export class FieldSet {
  private readonly members: Map<string, PathElements>;

  constructor(members?: Map<string, PathElements>) {
    this.members = members ?? new Map<string, PathElements>();
  }

  static of(paths: Iterable<PathElements>): FieldSet {
    const s = new FieldSet();
    for (const p of paths) s.insert(p);
    return s;
  }

  insert(pes: PathElements): void {
    this.members.set(pathKey(pes), pes);
  }

  /** Inserts a path whose `pathKey` the caller already has. */
  insertKeyed(key: string, pes: PathElements): void {
    this.members.set(key, pes);
  }

  delete(pes: PathElements): void {
    this.members.delete(pathKey(pes));
  }

  has(pes: PathElements): boolean {
    return this.members.has(pathKey(pes));
  }

  get size(): number {
    return this.members.size;
  }

  isEmpty(): boolean {
    return this.members.size === 0;
  }

  paths(): PathElements[] {
    return [...this.members.values()];
  }

  union(other: FieldSet): FieldSet {
    if (other.isEmpty()) return new FieldSet(new Map(this.members));
    const m = new Map(this.members);
    for (const [k, p] of other.members) m.set(k, p);
    return new FieldSet(m);
  }

  difference(other: FieldSet): FieldSet {
    const m = new Map<string, PathElements>();
    for (const [k, p] of this.members) if (!other.members.has(k)) m.set(k, p);
    return new FieldSet(m);
  }

  intersection(other: FieldSet): FieldSet {
    const m = new Map<string, PathElements>();
    for (const [k, p] of this.members) if (other.members.has(k)) m.set(k, p);
    return new FieldSet(m);
  }

  /** Members that are `prefix` itself or lie below it. */
  under(prefix: PathElements): FieldSet {
    return this.filter((p) => prefix.every((pe, i) => p[i] === pe));
  }

  filter(keep: (p: PathElements) => boolean): FieldSet {
    const m = new Map<string, PathElements>();
    for (const [k, p] of this.members) if (keep(p)) m.set(k, p);
    return new FieldSet(m);
  }

  equals(other: FieldSet): boolean {
    if (this.size !== other.size) return false;
    for (const k of this.members.keys()) if (!other.members.has(k)) return false;
    return true;
  }

  toFieldsV1(): Record<string, unknown> {
    interface Node {
      self: boolean;
      children: Map<string, Node>;
    }
    const root: Node = { self: false, children: new Map() };
    for (const pes of this.members.values()) {
      let n = root;
      for (const pe of pes) {
        let c = n.children.get(pe);
        if (!c) n.children.set(pe, (c = { self: false, children: new Map() }));
        n = c;
      }
      n.self = true;
    }
    const render = (n: Node): Record<string, unknown> => {
      const out: Record<string, unknown> = {};
      if (n.self && n.children.size > 0) out['.'] = {};
      for (const pe of [...n.children.keys()].sort(comparePathElements))
        out[pe] = render(n.children.get(pe)!);
      return out;
    };
    return render(root);
  }

  static fromFieldsV1(fields: unknown): FieldSet {
    const s = new FieldSet();
    const walk = (node: unknown, prefix: string[]): void => {
      if (typeof node !== 'object' || node === null) return;
      const entries = Object.entries(node as Record<string, unknown>);
      if (entries.length === 0 && prefix.length > 0) s.insert(prefix);
      for (const [k, v] of entries) {
        if (k === '.') s.insert(prefix);
        else walk(v, [...prefix, k]);
      }
    };
    walk(fields, []);
    return s;
  }
}

const ORDER: Record<string, number> = { f: 0, k: 1, v: 2, i: 3 };

export function comparePathElements(a: string, b: string): number {
  const oa = ORDER[a[0] ?? ''] ?? 9;
  const ob = ORDER[b[0] ?? ''] ?? 9;
  if (oa !== ob) return oa - ob;
  if (a[0] === 'i') return Number(a.slice(2)) - Number(b.slice(2));
  return a < b ? -1 : a > b ? 1 : 0;
}

/** `.spec.template.spec.containers[name="nginx"].image`: the form used in conflict messages. */
export function pathString(pes: PathElements): string {
  let out = '';
  for (const pe of pes) {
    const body = pe.slice(2);
    switch (pe.charAt(0)) {
      case 'f':
        out += `.${body}`;
        break;
      case 'k': {
        const obj = JSON.parse(body) as Record<string, unknown>;
        out += `[${Object.entries(obj)
          .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
          .join(',')}]`;
        break;
      }
      case 'v':
        out += `[=${body}]`;
        break;
      default:
        out += `[${body}]`;
    }
  }
  return out;
}

/** Compact JSON with sorted keys: the `k:` element form. */
export function keyElement(keyFields: Record<string, unknown>): string {
  const sorted: Record<string, unknown> = {};
  for (const k of Object.keys(keyFields).sort()) sorted[k] = keyFields[k];
  return `k:${JSON.stringify(sorted)}`;
}
