import { type KubeObject } from './kube-object.js';

/**
 * Argo CD's sync and compare options, as Flotilla treats each one: honoured (with what it does here)
 * or refused (with why). One table, read by the hub — an option it does not honour is refused when
 * the ApplicationSet is submitted or the manifest rendered, naming the field — and by the agent,
 * which acts on them. An option is never accepted and ignored.
 */

/** Per-resource sync options: a comma-separated `Key=Value` list. Flotilla's own name first. */
export const SYNC_OPTIONS_ANNOTATIONS = [
  'flotilla.dev/sync-options',
  'argocd.argoproj.io/sync-options',
] as const;
/** Per-resource compare options, same format. */
export const COMPARE_OPTIONS_ANNOTATIONS = [
  'flotilla.dev/compare-options',
  'argocd.argoproj.io/compare-options',
] as const;

/** What one value of an option does: `honoured` says what Flotilla does, `refused` why it does not. */
export type OptionValueRule = { honoured: string } | { refused: string };
/** Option key → value → rule. A key or value not listed is refused as unknown. */
export type OptionTable = Readonly<Record<string, Readonly<Record<string, OptionValueRule>>>>;

const SERVER_SIDE_APPLY: Readonly<Record<string, OptionValueRule>> = {
  true: {
    honoured:
      'the default: objects are applied by server-side apply (field manager flotilla, conflicts forced)',
  },
  false: {
    honoured:
      'the object is written as kubectl apply (client-side) writes it, field manager flotilla-client-side-apply: the last-applied-configuration annotation and a three-way patch (strategic merge for built-in kinds, JSON merge for custom resources), created when missing; fields Git dropped since the last apply are removed, fields others set are kept',
  },
};
const REPLACE: Readonly<Record<string, OptionValueRule>> = {
  true: {
    honoured:
      'the object is written whole (as kubectl replace, or created when missing) instead of server-side applied: fields Git does not declare are removed, whoever set them; with Force=true it is deleted and created again',
  },
  false: { honoured: 'the default: objects are applied by server-side apply, never replaced' },
};
const FORCE: Readonly<Record<string, OptionValueRule>> = {
  true: {
    honoured:
      'an object whose apply the API refuses as invalid (an immutable field changed: a Job template, a selector) is deleted and created again; with Replace=true it is re-created on every sync',
  },
  false: { honoured: 'the default: a refused apply fails the object' },
};

/** `spec.template.spec.syncPolicy.syncOptions` of an Application: options for every object of the target. */
export const TARGET_SYNC_OPTIONS: OptionTable = {
  RespectIgnoreDifferences: {
    true: { honoured: 'fields matched by ignoreDifferences keep their live value when an object is applied' },
    false: { honoured: 'the default: ignored fields are applied as Git declares them' },
  },
  ServerSideApply: SERVER_SIDE_APPLY,
  Replace: REPLACE,
  PruneLast: {
    true: {
      honoured:
        'pruned as a last wave of the Sync phase: after every wave is applied and healthy, before PostSync hooks',
    },
    false: {
      honoured:
        'the default: what is no longer declared is pruned inside the Sync phase, in the reverse order of its sync waves (the highest first), before PostSync hooks',
    },
  },
  SkipDryRunOnMissingResource: {
    true: {
      honoured:
        'a sync has no dry-run pass, so a custom resource whose CRD the same sync creates is applied after it; a requested dry run reports it as would be created',
    },
    false: { honoured: 'the default' },
  },
  CreateNamespace: {
    true: {
      honoured:
        'a sync first applies the destination namespace (with syncPolicy.managedNamespaceMetadata) unless the bundle declares it; it is not tracked, so never pruned',
    },
    false: { honoured: 'the default: the destination namespace must exist or be declared' },
  },
  PrunePropagationPolicy: {
    foreground: {
      honoured:
        "the default, as Argo CD's: a pruned object is deleted with propagationPolicy=Foreground, gone once its dependents are",
    },
    background: {
      honoured:
        'pruned objects are deleted with propagationPolicy=Background: dependents are collected after',
    },
    orphan: {
      honoured:
        'pruned objects are deleted with propagationPolicy=Orphan: their dependents stay, without the owner reference',
    },
  },
  ApplyOutOfSyncOnly: {
    true: {
      honoured:
        'a sync applies only the objects that differ from what runs (as the drift comparison sees them); hooks still run and every object is reported, in sync ones as unchanged',
    },
    false: { honoured: 'the default: a sync applies every declared object' },
  },
  FailOnSharedResource: {
    true: {
      honoured:
        'a sync that declares an object another target tracks (its flotilla.dev/tracking-id) fails before anything is applied, naming the object and the other target',
    },
    false: {
      honoured: 'the default: such an object is taken over by this target, and the run says from which',
    },
  },
  Force: FORCE,
  ClientSideApplyMigration: {
    false: { honoured: 'Flotilla never moves fields a client-side apply owns into its own field manager' },
    true: {
      refused:
        'ClientSideApplyMigration=true is not supported: fields a client-side apply (kubectl apply) set stay owned by it',
    },
  },
  Validate: {
    true: {
      honoured:
        'the default, as kubectl: every write asks for strict field validation (fieldValidation=Strict), so a field the schema does not declare (a typo) fails the object, naming the field, and nothing of it is written',
    },
    false: {
      honoured:
        'writes ask for fieldValidation=Ignore, as kubectl --validate=false: the API server drops fields the schema does not declare and applies the rest; such a dropped field is not drift',
    },
  },
};

/** `argocd.argoproj.io/sync-options` on one manifest. */
export const RESOURCE_SYNC_OPTIONS: OptionTable = {
  Prune: {
    false: {
      honoured:
        'the object is never pruned: removed from Git it stays in the cluster, and each sync reports it as left in place',
    },
    true: { honoured: 'the default: pruned when removed from Git and the target prunes' },
    confirm: {
      refused:
        'Prune=confirm is not supported: Flotilla has no prune confirmation; use Prune=false to keep the object',
    },
  },
  Delete: {
    false: {
      honoured:
        "when its target is deleted (a deletion a person asked for, or an appset with Argo CD's resources finalizer) the object stays in the cluster, reported as kept; Prune=false alone does not keep it, as in Argo CD",
    },
    true: { honoured: "the default: deleted with its target when the target's deletion deletes objects" },
    confirm: {
      refused:
        'Delete=confirm is not supported: Flotilla has no deletion confirmation; the deletion itself is asked for and audited at the hub. Use Delete=false to keep the object',
    },
  },
  PruneLast: TARGET_SYNC_OPTIONS['PruneLast'] as Readonly<Record<string, OptionValueRule>>,
  SkipDryRunOnMissingResource: TARGET_SYNC_OPTIONS['SkipDryRunOnMissingResource'] as Readonly<
    Record<string, OptionValueRule>
  >,
  ServerSideApply: SERVER_SIDE_APPLY,
  Replace: REPLACE,
  Force: FORCE,
  Validate: TARGET_SYNC_OPTIONS['Validate'] as Readonly<Record<string, OptionValueRule>>,
};

/** `argocd.argoproj.io/compare-options` on one manifest. */
export const RESOURCE_COMPARE_OPTIONS: OptionTable = {
  IgnoreExtraneous: {
    // Argo CD's value has no `=`; it stands alone in the list.
    '': {
      honoured:
        'an object Git no longer declares never makes the target OutOfSync in Flotilla: status follows the last sync of what Git declares',
    },
  },
  ServerSideDiff: {
    true: {
      refused:
        'ServerSideDiff is not supported: drift is the difference on the fields Flotilla applied (its managedFields), compared by the agent',
    },
    false: { honoured: 'the default: the agent compares the fields it applied' },
  },
  IncludeMutationWebhook: {
    true: { refused: 'IncludeMutationWebhook=true is not supported: Flotilla has no server-side diff' },
  },
};

/** One option that cannot be used; `path` names the field, `option` the entry as written. */
export class SyncOptionError extends Error {
  override readonly name = 'SyncOptionError';
  readonly code = 'unsupported-sync-option';
  constructor(
    message: string,
    readonly path: string,
  ) {
    super(message);
  }
}

/**
 * Reads a list of `Key=Value` options against a table: the value of each key, in a map. Throws
 * SyncOptionError at the first entry that is malformed, unknown or refused (`path[i]` names it).
 */
export function readOptions(
  entries: readonly unknown[],
  table: OptionTable,
  path: string,
  /** Entries not to judge yet (a template expression, checked once expanded); their index still counts. */
  skip: (entry: unknown) => boolean = () => false,
): Map<string, string> {
  const out = new Map<string, string>();
  entries.forEach((entry, i) => {
    if (skip(entry)) return;
    const at = `${path}[${i}]`;
    if (typeof entry !== 'string')
      throw new SyncOptionError(`${JSON.stringify(entry)} is not a "Key=Value" option`, at);
    const eq = entry.indexOf('=');
    const key = (eq < 0 ? entry : entry.slice(0, eq)).trim();
    const value = eq < 0 ? '' : entry.slice(eq + 1).trim();
    const values = Object.hasOwn(table, key) ? table[key] : undefined;
    if (!values)
      throw new SyncOptionError(`unknown option "${key}" (known: ${Object.keys(table).join(', ')})`, at);
    const rule = Object.hasOwn(values, value) ? values[value] : undefined;
    if (!rule) {
      const expected = Object.keys(values).filter((v) => 'honoured' in (values[v] as OptionValueRule));
      throw new SyncOptionError(
        `${key}: unsupported value "${value}" (expected ${expected.map((v) => (v ? `${key}=${v}` : key)).join(' or ')})`,
        at,
      );
    }
    if ('refused' in rule) throw new SyncOptionError(rule.refused, at);
    out.set(key, value);
  });
  return out;
}

/** What the agent does differently for one object, from its annotations. */
export interface ResourceSyncOptions {
  /** False: never pruned (Prune=false). */
  prune: boolean;
  /** Replace=true|false on the object; undefined when it does not say (the target's choice applies). */
  replace?: boolean;
  /** Force=true|false on the object; undefined when it does not say. */
  force?: boolean;
  /** PruneLast=true|false on the object; undefined when it does not say. */
  pruneLast?: boolean;
  /** Validate=true|false on the object; undefined when it does not say. */
  validate?: boolean;
  /** ServerSideApply=true|false on the object; undefined when it does not say. */
  serverSideApply?: boolean;
  /** False: kept when its target is deleted (Delete=false). */
  delete: boolean;
}

/**
 * The sync and compare options one manifest carries, checked against the tables. Throws
 * SyncOptionError naming the annotation (`metadata.annotations["…"][i]`).
 */
export function resourceSyncOptionsOf(obj: Pick<KubeObject, 'metadata'>): ResourceSyncOptions {
  const annotations = obj.metadata.annotations ?? {};
  const sync = new Map<string, string>();
  for (const name of SYNC_OPTIONS_ANNOTATIONS) {
    const raw = annotations[name];
    if (raw === undefined) continue;
    for (const [k, v] of readOptions(splitAnnotationList(raw), RESOURCE_SYNC_OPTIONS, annotationPath(name)))
      sync.set(k, v);
  }
  for (const name of COMPARE_OPTIONS_ANNOTATIONS) {
    const raw = annotations[name];
    if (raw !== undefined)
      readOptions(splitAnnotationList(raw), RESOURCE_COMPARE_OPTIONS, annotationPath(name));
  }
  const out: ResourceSyncOptions = {
    prune: sync.get('Prune') !== 'false',
    delete: sync.get('Delete') !== 'false',
  };
  if (sync.has('Replace')) out.replace = sync.get('Replace') === 'true';
  if (sync.has('Force')) out.force = sync.get('Force') === 'true';
  if (sync.has('PruneLast')) out.pruneLast = sync.get('PruneLast') === 'true';
  if (sync.has('Validate')) out.validate = sync.get('Validate') === 'true';
  if (sync.has('ServerSideApply')) out.serverSideApply = sync.get('ServerSideApply') === 'true';
  return out;
}

/** The entries of a comma-separated annotation value (`a, b,c`), trimmed, empty ones dropped. */
export function splitAnnotationList(raw: string): string[] {
  return raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function annotationPath(name: string): string {
  return `metadata.annotations["${name}"]`;
}
