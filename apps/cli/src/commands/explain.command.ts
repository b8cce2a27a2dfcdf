import { type CommandDescription } from '../command.js';
import type { ExplainTargetView, ExplainView } from '@flotilla/contract';
import { UsageError } from '../offline/offline-command.js';
import {
  describeHubCommand,
  printResult,
  runHubCommand,
  stringValue,
  type HubCommandSpec,
} from './hub-command.js';

const USAGE = 'flotilla explain --cluster C --appset A [-o json]';

const SPEC: HubCommandSpec = {
  name: 'explain',
  usage: [
    `usage: ${USAGE}`,
    '',
    'Why cluster C gets (or does not get) the targets of ApplicationSet A: each generator with the',
    'selector requirement that failed or the parameters that matched, the values applied, the',
    'revision the source resolves to and the bundle digest, and what holds the target (deletion',
    'guard, a failing expansion, sync windows, break-glass overrides, a non-deterministic render).',
  ].join('\n'),
  options: {
    cluster: { type: 'string' },
    appset: { type: 'string' },
  },
};

export const describe: CommandDescription = describeHubCommand(SPEC);

export function run(argv: string[]): Promise<number> {
  return runHubCommand(argv, SPEC, async ({ values, positionals, output, client }) => {
    const cluster = stringValue(values['cluster']);
    const appSet = stringValue(values['appset']);
    if (!cluster || !appSet || positionals.length > 0)
      throw new UsageError(`--cluster and --appset are required: ${USAGE}`);
    const view = await client.request<ExplainView>(
      'GET',
      `/api/v1/explain?cluster=${encodeURIComponent(cluster)}&appset=${encodeURIComponent(appSet)}`,
    );
    printResult(view, output, () => explainText(view));
    return 0;
  });
}

/** The answer for a person: verdict first, then generators, then each target with its holds. */
export function explainText(v: ExplainView): string {
  const lines: string[] = [];
  lines.push(
    `cluster ${v.cluster} · appset ${v.appSet}: ${v.matched ? 'MATCHED' : 'NOT MATCHED'} (appset ${v.appSetStatus.status})`,
  );
  lines.push('', 'generators:');
  for (const g of v.generators) {
    const verdict =
      g.verdict === 'matched' ? `matched → ${g.targets.join(', ')}` : g.verdict.replace('-', ' ');
    lines.push(
      `  [${g.index}] ${g.type.padEnd(9)} ${verdict}   (${g.produced} parameter sets, ${g.kept} kept)`,
    );
    for (const s of g.selectors) {
      lines.push(
        `      selector ${s.path}: ${s.matched ? 'matched' : `failed: ${s.unmet.map((u) => `${u.requirement} (cluster has ${u.actual})`).join('; ')}`}`,
      );
    }
    for (const r of g.reasons) lines.push(`      - ${r}`);
  }
  if (v.targets.length > 0) lines.push('', 'targets:');
  for (const t of v.targets) lines.push(...targetLines(t));
  return lines.join('\n');
}

/** Twelve characters, as the hub's messages show commits; '-' for none. */
function sha12(sha: string | null | undefined): string {
  return sha ? sha.slice(0, 12) : '-';
}

function targetLines(t: ExplainTargetView): string[] {
  const s = t.source;
  const text = (x: unknown) => (typeof x === 'string' ? x : JSON.stringify(x));
  const out = [`  ${t.name}   (from ${t.generator})`];
  out.push(
    `    source     ${text(s['repoURL'])} path ${text(s['path'] ?? '.')} @ ${text(s['targetRevision'] ?? 'HEAD')} → ${t.resolvedRevision ? sha12(t.resolvedRevision) : 'unresolved'}`,
  );
  if (s['kustomize'] !== undefined) out.push(`    kustomize  ${JSON.stringify(s['kustomize'])}`);
  out.push(
    `    dest       ${t.destination.name ?? t.destination.server ?? '?'} namespace ${t.destination.namespace ?? 'default'}`,
  );
  const params = Object.entries(t.params).map(([k, val]) => `${k}=${text(val)}`);
  out.push(`    values     ${params.length > 0 ? params.join(', ') : '(none)'}`);
  out.push(
    t.stored
      ? `    stored     desired ${sha12(t.stored.desiredRevision)}, bundle ${t.stored.bundleDigest ?? '-'}, synced ${t.stored.lastSyncedRevision ? sha12(t.stored.lastSyncedRevision) : '-'}, health ${t.stored.health}`
      : '    stored     (no target yet)',
  );
  if (t.render)
    out.push(
      `    render     ${t.render.renderer}, ${t.render.deterministic ? 'deterministic' : 'NOT deterministic'}`,
    );
  if (t.holds.length === 0) out.push('    holds      none');
  else for (const h of t.holds) out.push(`    hold       ${h.kind}: ${h.message}`);
  return out;
}
