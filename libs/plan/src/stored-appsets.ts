import { type FleetFile, type FleetObject } from '@flotilla/fleet-config';
import { parseAllDocuments } from 'yaml';

/**
 * ApplicationSets are stored as written (the hub's generators read Argo CD's form), not in the
 * normalised form the validation parsed them into.
 */
export function withRawAppSets(objects: readonly FleetObject[], files: readonly FleetFile[]): FleetObject[] {
  const contents = new Map(files.map((f) => [f.path, f.content]));
  const strategies = new Map(
    objects.flatMap((o) => (o.kind === 'RolloutStrategy' ? [[o.name, o.object.spec] as const] : [])),
  );
  return objects.map((o) => {
    if (o.kind !== 'ApplicationSet') return o;
    const docs = parseAllDocuments(contents.get(o.file) ?? '');
    const raw = docs[o.document]?.toJS() as FleetObject['object'] | undefined;
    return raw === undefined ? o : ({ ...o, object: withRolloutStrategy(raw, strategies) } as FleetObject);
  });
}

/**
 * An appset that names a RolloutStrategy (`spec.rolloutStrategy`) is stored with that strategy's
 * steps as its `spec.rollout`, which is what the hub's rollouts read. The strategy is part of the
 * stored object, so a commit that changes the strategy updates every appset naming it (and is
 * recorded on each), and the validator has already checked that the name exists in the directory.
 */
export function withRolloutStrategy(raw: unknown, strategies: ReadonlyMap<string, unknown>): unknown {
  const spec = (raw as { spec?: Record<string, unknown> }).spec;
  const name = spec?.['rolloutStrategy'];
  if (typeof name !== 'string') return raw;
  const strategy = strategies.get(name);
  if (strategy === undefined) return raw;
  return { ...(raw as Record<string, unknown>), spec: { ...spec, rollout: strategy } };
}
