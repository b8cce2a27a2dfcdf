import { FIELD_MANAGER, type KubeObject } from '@flotilla/contract';

interface ManagedFieldsEntry {
  manager?: string;
  operation?: string;
  time?: string;
  subresource?: string;
  fieldsV1?: Record<string, unknown>;
}

/**
 * Which field managers other than `flotilla` own the field at `pointer` in `live`, according to its
 * managedFields — the name to put on a drift ("who changed this?"). Most recent writer first.
 * List indexes in the pointer are matched against the live element's keys (`k:{...}`), its value
 * (`v:...`) or its index (`i:n`), as FieldsV1 encodes them.
 */
export function managersOf(live: KubeObject, pointer: string): string[] {
  const entries = ((live.metadata as { managedFields?: ManagedFieldsEntry[] }).managedFields ?? []).filter(
    (e) => e.manager && e.manager !== FIELD_MANAGER && e.subresource !== 'status' && e.fieldsV1,
  );
  const segments = parsePointer(pointer);
  const owners = entries.filter((e) => owns(e.fieldsV1 ?? {}, live, segments));
  owners.sort((a, b) => (b.time ?? '').localeCompare(a.time ?? ''));
  return [...new Set(owners.map((e) => e.manager ?? ''))];
}

/** The manager to blame for a set of drifted paths: the one owning most of them, if any. */
export function blameManager(live: KubeObject, pointers: readonly string[]): string | undefined {
  const votes = new Map<string, number>();
  for (const p of pointers) {
    const first = managersOf(live, p)[0];
    if (first) votes.set(first, (votes.get(first) ?? 0) + 1);
  }
  let best: string | undefined;
  let bestVotes = 0;
  for (const [manager, n] of votes) {
    if (n > bestVotes) [best, bestVotes] = [manager, n];
  }
  return best;
}

function owns(fields: Record<string, unknown>, live: unknown, segments: string[]): boolean {
  let node: Record<string, unknown> | undefined = fields;
  let value: unknown = live;
  for (const seg of segments) {
    if (node === undefined) return false;
    // A leaf or an atomic parent owns everything beneath it.
    if (Object.keys(node).length === 0) return true;
    let next: unknown;
    if (Array.isArray(value)) {
      const index = Number(seg);
      const element: unknown = value[index];
      next = findListChild(node, element, index);
      value = element;
    } else {
      next = node[`f:${seg}`];
      value =
        value !== null && typeof value === 'object' ? (value as Record<string, unknown>)[seg] : undefined;
    }
    node = next !== null && typeof next === 'object' ? (next as Record<string, unknown>) : undefined;
  }
  return node !== undefined;
}

function findListChild(node: Record<string, unknown>, element: unknown, index: number): unknown {
  for (const [key, child] of Object.entries(node)) {
    if (key.startsWith('k:')) {
      try {
        const keyFields = JSON.parse(key.slice(2)) as Record<string, unknown>;
        if (
          element !== null &&
          typeof element === 'object' &&
          Object.entries(keyFields).every(
            ([k, v]) => JSON.stringify((element as Record<string, unknown>)[k]) === JSON.stringify(v),
          )
        ) {
          return child;
        }
      } catch {
        // not a key we understand
      }
    } else if (key.startsWith('v:') && key.slice(2) === JSON.stringify(element)) {
      return child;
    } else if (key === `i:${index}`) {
      return child;
    }
  }
  return undefined;
}

function parsePointer(pointer: string): string[] {
  if (pointer === '' || pointer === '/') return [];
  return pointer
    .replace(/^\//, '')
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'));
}
