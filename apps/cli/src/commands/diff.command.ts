import { type CommandDescription } from '../command.js';
import { describeOffline } from '../offline/offline-command.js';
import { parseOptions } from '../options/parse-options.js';
import { ignoreRuleSchema, type IgnoreRule, type TargetDiffView } from '@flotilla/contract';
import { DiffError, compileIgnoreRules, diffObjects, type DiffResult } from '@flotilla/diff';
import {
  EvaluationError,
  UsageError,
  errorResult,
  many,
  readDocuments,
  readOneDocument,
  offlineCommand,
  type ArgValue,
} from '../offline/offline-command.js';
import {
  age,
  expectName,
  HUB_COMMON_OPTIONS,
  printResult,
  runHubCommand,
  shortSha,
  type HubCommandSpec,
} from './hub-command.js';

const HELP = `usage: flotilla diff --desired FILE --live FILE [--ignore RULES] [--manager NAME] [--yield MANAGER]... [-o json|yaml|table]

Compares a desired object with the live one after the normalisation the agent uses for drift, and
prints {"inSync": bool, "differences": [{"path", "desired", "live"}]}.
  --desired FILE    the object as declared (YAML or JSON)
  --live FILE       the object as read from the cluster, with its managedFields
  --ignore RULES    a YAML list of ignore rules {group, kind, name?, namespace?, jsonPointers?,
                    jqPathExpressions?, managedFieldsManagers?} (Argo CD's ignoreDifferences)
  --manager NAME    the field manager that applies the desired object (default flotilla)
  --yield MANAGER   a manager whose fields are never drift (e.g. an autoscaler); repeatable
--desired and --live may be repeated in pairs; the output is then an array in input order.
An empty --live file means the object does not exist yet.
Exit 0 whatever the verdict, 1 for a bad ignore rule, 2 for bad usage or unreadable input.

flotilla diff TARGET [--exit-code] [-o json|yaml] [--hub URL] [--token T] [--context NAME]
asks the hub what a sync would change on the target's cluster (see flotilla diff TARGET --help).`;

const OPTIONS = {
  desired: { type: 'string', multiple: true },
  live: { type: 'string', multiple: true },
  ignore: { type: 'string' },
  manager: { type: 'string' },
  yield: { type: 'string', multiple: true },
} as const;

const runOffline = offlineCommand('diff', HELP, OPTIONS, evaluate);

/**
 * `flotilla diff TARGET` asks the hub; `flotilla diff --desired … --live …` stays the offline
 * comparison of CLI.md, byte for byte: any call naming --desired or --live, or without a TARGET, is
 * the offline one.
 */
export function run(argv: string[]): Promise<number> {
  return isHubDiff(argv) ? runHubDiff(argv) : runOffline(argv);
}

const HUB_SPEC: HubCommandSpec = {
  name: 'diff',
  usage: [
    'usage: flotilla diff TARGET [--exit-code] [-o json|yaml]',
    '',
    "What a sync would change on the target's cluster, as a unified diff per object like kubectl diff",
    "(live against what the sync would make it; Secret values masked), from the agent's last comparison",
    'of the revision Git wants with what runs. Nothing is printed when they agree. Works with automated',
    'sync off: the agent compares and applies nothing until someone syncs.',
    '  --exit-code   exit 1 when a sync would change something, 0 when not, 2 when it cannot tell',
    '                (no comparison of the wanted revision yet, the hub unreachable or refusing, bad usage)',
    'Without --exit-code: 0 when shown, 1 when it cannot tell or the hub fails, 2 for bad usage.',
    'The offline form, flotilla diff --desired FILE --live FILE, is unchanged (flotilla diff --help).',
  ].join('\n'),
  options: { 'exit-code': { type: 'boolean' } },
};

/** A TARGET and neither --desired nor --live. */
function isHubDiff(argv: string[]): boolean {
  if (argv.some((a) => /^--(desired|live)(=|$)/.test(a))) return false;
  try {
    const { positionals } = parseOptions(
      argv,
      { ...HUB_SPEC.options, ...HUB_COMMON_OPTIONS },
      { command: 'diff', allowPositionals: true },
    );
    return positionals.length > 0;
  } catch {
    return false;
  }
}

async function runHubDiff(argv: string[]): Promise<number> {
  const exitCode = argv.includes('--exit-code');
  // Set only when the comparison answered: whatever else ends the command is "cannot tell".
  let verdict: 'same' | 'different' | undefined;
  const code = await runHubCommand(argv, HUB_SPEC, async ({ positionals, output, client }) => {
    const name = expectName(positionals, 'flotilla diff TARGET [--exit-code]');
    const view = await client.targetDiff(name);
    const c = view.comparison;
    if (output !== 'table') printResult(view, output, () => '');
    if (!c || !c.current) {
      console.error(`flotilla diff: ${name}: ${notComparedYet(view)}`);
      return 1;
    }
    // An object a sync would prune is a change too (`kubectl diff --prune`); one left in place is not.
    const pruned = c.objects.filter((o) => o.action === 'delete' && o.prune === true).length;
    const leftInPlace = c.objects.filter((o) => o.action === 'delete' && o.prune !== true).length;
    verdict = c.inSync && pruned === 0 ? 'same' : 'different';
    if (output === 'table') {
      for (const o of c.objects) {
        if (o.action === 'delete') process.stdout.write(`${pruneNote(o)}\n`);
        process.stdout.write(
          o.diff || `(${o.kind} ${o.name}: ${o.action}, diff left out to keep to the size limit)\n`,
        );
      }
      const declaredDiffer = c.objects.length - pruned - leftInPlace;
      console.error(
        `# compared by the agent of ${view.cluster} ${age(c.observedAt)} ago at revision ${shortSha(c.revision)}: ` +
          `${declaredDiffer} of ${c.compared} object(s) differ` +
          (pruned > 0 ? `, ${pruned} would be pruned` : '') +
          (leftInPlace > 0 ? `, ${leftInPlace} no longer declared but left in place (prune off)` : '') +
          (c.truncated ? ' (cut to the size limits: more not shown)' : ''),
      );
    }
    return exitCode && verdict === 'different' ? 1 : 0;
  });
  return exitCode && verdict === undefined && code !== 0 ? 2 : code;
}

/** The line above a prune candidate's diff: whether a sync deletes it. */
function pruneNote(o: {
  group: string;
  kind: string;
  namespace?: string;
  name: string;
  prune?: boolean;
}): string {
  const id = `${o.group ? `${o.group}/` : ''}${o.kind} ${o.namespace ? `${o.namespace}/` : ''}${o.name}`;
  return o.prune === true
    ? `# ${id}: no longer in Git; prune is on: a sync deletes it`
    : `# ${id}: no longer in Git; not pruned (prune is off, or Prune=false on it): a sync leaves it in place`;
}

/** Why there is no diff to show for the revision Git wants. */
function notComparedYet(view: TargetDiffView): string {
  const c = view.comparison;
  if (!c) return "its agent has not reported a comparison yet (is it online? see 'flotilla targets')";
  return (
    `its agent's latest comparison is of revision ${shortSha(c.revision)} (${age(c.observedAt)} ago); ` +
    `Git wants ${shortSha(view.desiredRevision)}, not compared yet: try again shortly`
  );
}

function evaluate(values: Record<string, ArgValue>): {
  results: unknown[];
  batch: boolean;
  table: (r: unknown) => string;
} {
  const desired = many(values['desired']);
  const live = many(values['live']);
  if (desired.length === 0 || live.length === 0)
    throw new UsageError('diff needs --desired FILE and --live FILE');
  if (desired.length !== live.length) {
    throw new UsageError(`--desired and --live come in pairs: got ${desired.length} and ${live.length}`);
  }
  const manager = typeof values['manager'] === 'string' ? values['manager'] : undefined;
  if (manager === '') throw new UsageError('--manager must not be empty');
  const ignorePath = typeof values['ignore'] === 'string' ? values['ignore'] : undefined;
  const ignoreRules = ignorePath ? readRules(ignorePath) : [];
  const yieldToManagers = many(values['yield']);
  const inputs = desired.map((d, i) => {
    const l = live[i] ?? '';
    return { d, l, desiredObj: readOneDocument(d), liveObj: readLive(l) };
  });
  const results = inputs.map(({ d, l, desiredObj, liveObj }) => {
    try {
      const result = diffObjects(desiredObj, liveObj, {
        ignoreRules,
        yieldToManagers,
        ...(manager ? { manager } : {}),
      });
      // The output is CLI.md's contract: path, desired and live for each difference, nothing more.
      return {
        inSync: result.inSync,
        differences: result.differences.map(({ path, desired, live }) => ({ path, desired, live })),
      };
    } catch (err) {
      if (err instanceof DiffError && err.code === 'invalid-object') {
        throw new UsageError(`${err.path === 'desired' ? d : l}: ${err.message}`);
      }
      return errorResult(err);
    }
  });
  return { results, batch: results.length > 1, table: formatTable };
}

/** An empty live file (or a `null` document) stands for an object the cluster does not have. */
function readLive(path: string): unknown {
  const docs = readDocuments(path);
  if (docs.length > 1) throw new UsageError(`${path}: expected one document, found ${docs.length}`);
  return docs[0] ?? null;
}

/** Ignore rules are checked here (shape) and by the diff (JSON pointers, jq syntax). */
function readRules(path: string): IgnoreRule[] {
  const docs = readDocuments(path);
  if (docs.length === 0) return [];
  if (docs.length > 1) {
    throw new UsageError(`${path}: expected one YAML list of ignore rules, found ${docs.length} documents`);
  }
  const doc = docs[0];
  // Argo CD's Application spec nests the same list under ignoreDifferences; accept both.
  const list =
    typeof doc === 'object' && doc !== null && !Array.isArray(doc) && 'ignoreDifferences' in doc
      ? doc.ignoreDifferences
      : doc;
  if (!Array.isArray(list)) throw new EvaluationError(`${path}: expected a YAML list of ignore rules`);
  const rules = list.map((raw: unknown, i) => {
    const parsed = ignoreRuleSchema.safeParse(raw);
    if (parsed.success) return parsed.data;
    const issue = parsed.error.issues[0];
    const field = issue?.path.map(String).join('.') ?? '';
    throw new EvaluationError(
      `${path}: invalid ignore rule [${i}]${field ? `.${field}` : ''}: ${issue?.message ?? 'invalid'}`,
    );
  });
  try {
    compileIgnoreRules(rules);
  } catch (err) {
    if (err instanceof DiffError) throw new EvaluationError(`${path}: ${err.message}`);
    throw err;
  }
  return rules;
}

function formatTable(r: unknown): string {
  const result = r as DiffResult;
  if (result.inSync) return 'in sync';
  const lines = [`out of sync: ${result.differences.length} difference(s)`];
  for (const d of result.differences) {
    lines.push(
      `  ${d.path || '/'}`,
      `    desired: ${JSON.stringify(d.desired)}`,
      `    live:    ${JSON.stringify(d.live)}`,
    );
  }
  return lines.join('\n');
}

/** Both forms: the offline comparison's options, and the hub-backed one's with the hub's options. */
export const describe: CommandDescription = {
  options: { ...describeOffline(OPTIONS).options, ...HUB_SPEC.options, ...HUB_COMMON_OPTIONS },
};
