import type { FleetSourceDetailView, FleetSourceView } from '@flotilla/contract';
import { type CommandDescription } from '../command.js';
import { UsageError } from '../offline/offline-command.js';
import {
  age,
  columnsTable,
  expectName,
  expectPositionals,
  formatFields,
  printResult,
  describeHubCommand,
  runHubCommand,
  stringValue,
  type Column,
  type HubCommandSpec,
} from './hub-command.js';

const SPEC: HubCommandSpec = {
  name: 'fleet-sources',
  subcommands: ['list', 'show', 'add', 'confirm', 'remove'],
  listings: ['', 'list', 'show'],
  usage: [
    'usage: flotilla fleet-sources [list]',
    '       flotilla fleet-sources show ID',
    '       flotilla fleet-sources add URL [--revision REV] [--path DIR]',
    '       flotilla fleet-sources confirm ID --commit SHA --reason TEXT',
    '       flotilla fleet-sources remove ID',
    '',
    'Fleet repositories the hub reconciles its own objects from (docs/fleet-config.md). `show` prints',
    'the status (an invalid commit lists each error with file, document and field), the applied commit',
    'and author, and the objects with their files; `confirm` applies a commit the deletion guard holds.',
    '-o wide: `list` adds the whole applied commit and its author, the newest commit seen (a held or',
    "invalid one differs from the applied) and the error; `show` each object's commit and when it diverged.",
  ].join('\n'),
  options: {
    revision: { type: 'string' },
    path: { type: 'string' },
    commit: { type: 'string' },
    reason: { type: 'string' },
  },
};

export const describe: CommandDescription = describeHubCommand(SPEC);

export function run(argv: string[]): Promise<number> {
  return runHubCommand(argv, SPEC, async ({ values, positionals, output, client }) => {
    const [sub = 'list', ...rest] = positionals;
    switch (sub) {
      case 'list': {
        expectPositionals(rest, [], 'flotilla fleet-sources [list]');
        const sources = await client.request<FleetSourceView[]>('GET', '/api/v1/fleet-sources');
        printResult(sources, output, (wide) => fleetSourceTable(sources, wide));
        return 0;
      }
      case 'show': {
        const id = expectName(rest, 'flotilla fleet-sources show ID');
        const s = await client.request<FleetSourceDetailView>(
          'GET',
          `/api/v1/fleet-sources/${encodeURIComponent(id)}`,
        );
        printResult(s, output, (wide) =>
          [
            formatFields([
              ['Repository', `${s.repoUrl} ${s.revision} ${s.path || '.'}`],
              ['Status', s.status],
              ['Applied', s.appliedCommit ? `${s.appliedCommit} by ${s.appliedAuthor ?? '?'}` : '-'],
              ...(s.error ? ([['Error', `${s.error.code}: ${s.error.message}`]] as [string, string][]) : []),
            ]),
            ...(s.error?.errors ?? []).map(
              (e) => `  ${e.file} (document ${e.document}): ${e.path}: ${e.message}`,
            ),
            '',
            columnsTable(OBJECT_COLUMNS, s.objects, wide),
          ].join('\n'),
        );
        return 0;
      }
      case 'add': {
        const url = expectName(rest, 'flotilla fleet-sources add URL');
        const revision = stringValue(values['revision']);
        const path = stringValue(values['path']);
        const s = await client.request<FleetSourceView>('POST', '/api/v1/fleet-sources', {
          repoUrl: url,
          ...(revision !== undefined && { revision }),
          ...(path !== undefined && { path }),
        });
        printResult(
          s,
          output,
          () => `Fleet source ${s.id} follows ${s.repoUrl} ${s.revision} ${s.path || '.'}`,
        );
        return 0;
      }
      case 'confirm': {
        const id = expectName(rest, 'flotilla fleet-sources confirm ID --commit SHA --reason TEXT');
        const commit = stringValue(values['commit']);
        const reason = stringValue(values['reason']);
        if (!commit || !reason) throw new UsageError('confirm needs --commit SHA and --reason TEXT');
        const r = await client.request<{ status: string; deleted: string[] }>(
          'POST',
          `/api/v1/fleet-sources/${encodeURIComponent(id)}/confirm`,
          { commit, reason },
        );
        printResult(
          r,
          output,
          () => `Applied ${commit.slice(0, 12)}; deleted ${r.deleted.join(', ') || 'nothing'}`,
        );
        return 0;
      }
      case 'remove': {
        const id = expectName(rest, 'flotilla fleet-sources remove ID');
        await client.request('DELETE', `/api/v1/fleet-sources/${encodeURIComponent(id)}`);
        printResult(
          { removed: id },
          output,
          () => `Fleet source ${id} removed; its objects stay, API-managed (its health rules go with it).`,
        );
        return 0;
      }
      default:
        throw new UsageError(`unknown sub-command '${sub}'; expected list, show, add, confirm or remove`);
    }
  });
}

/** A commit: its first 12 characters in the table, whole in the wide one. */
const commit = (sha: string | null, wide: boolean): string => (sha ? (wide ? sha : sha.slice(0, 12)) : '-');

const FLEET_SOURCE_COLUMNS: Column<FleetSourceView>[] = [
  { header: 'ID', cell: (s) => s.id },
  { header: 'REPOSITORY', cell: (s) => s.repoUrl },
  { header: 'REVISION', cell: (s) => s.revision },
  { header: 'PATH', cell: (s) => s.path || '.' },
  { header: 'STATUS', cell: (s) => s.status },
  { header: 'COMMIT', cell: (s, wide) => commit(s.appliedCommit, wide) },
  { header: 'AUTHOR', cell: (s) => s.appliedAuthor ?? '-', wide: true },
  { header: 'APPLIED', cell: (s) => age(s.appliedAt) },
  { header: 'SEEN', cell: (s, wide) => commit(s.seenCommit, wide), wide: true },
  {
    header: 'ERROR',
    cell: (s) => (s.error ? `${s.error.code}: ${s.error.message.replace(/\s*\n\s*/g, ' ')}` : '-'),
    wide: true,
  },
];

export function fleetSourceTable(sources: FleetSourceView[], wide = false): string {
  return columnsTable(FLEET_SOURCE_COLUMNS, sources, wide);
}

type FleetObject = FleetSourceDetailView['objects'][number];

const OBJECT_COLUMNS: Column<FleetObject>[] = [
  { header: 'KIND', cell: (o) => o.kind },
  { header: 'NAME', cell: (o) => o.name },
  { header: 'FILE', cell: (o) => o.file },
  { header: 'COMMIT', cell: (o) => o.commit, wide: true },
  { header: 'DIVERGED', cell: (o) => (o.diverged ? `by ${o.diverged.by ?? '?'}` : '-') },
  { header: 'DIVERGED AT', cell: (o) => o.diverged?.at ?? '-', wide: true },
  {
    header: 'BREAK-GLASS',
    cell: (o) => (o.diverged?.breakGlassId != null ? `#${o.diverged.breakGlassId}` : '-'),
    wide: true,
  },
];
