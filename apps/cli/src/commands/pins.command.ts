import type { PinView } from '@flotilla/contract';
import { type CommandDescription } from '../command.js';
import { UsageError } from '../offline/offline-command.js';
import {
  expectName,
  columnsTable,
  expectPositionals,
  parseSelector,
  printResult,
  describeHubCommand,
  runHubCommand,
  shortSha,
  stringValue,
  type Column,
  type HubCommandSpec,
} from './hub-command.js';

export type { PinView } from '@flotilla/contract';

const ADD_USAGE =
  'flotilla pins add TARGET REVISION | --appset A [--selector k=v,...] REVISION  --reason TEXT [--until TIME]';
const REMOVE_USAGE = 'flotilla pins remove TARGET | --appset A [--selector k=v,...]  --reason TEXT';

const SPEC: HubCommandSpec = {
  name: 'pins',
  subcommands: ['list', 'add', 'remove'],
  listings: ['', 'list'],
  usage: [
    'usage: flotilla pins [list]',
    `       ${ADD_USAGE}`,
    `       ${REMOVE_USAGE}`,
    '',
    'Rollback by pinning: a pinned target is given REVISION (a commit, branch or tag of its repository)',
    'even under auto-sync, until it is removed or --until an RFC 3339 time passes. Agents that roll',
    'back on their own leave a pin by agent:<cluster>. `flotilla rollback` is `pins add`. With',
    '--appset, every target of the appset is pinned (or unpinned) at once, or those on clusters whose',
    'labels match --selector (k=v pairs, all must hold); a bad request pins nothing.',
    '`list -o wide` shows whole commits and the bundle each pin gives its target.',
  ].join('\n'),
  options: {
    reason: { type: 'string' },
    until: { type: 'string' },
    appset: { type: 'string' },
    // The old spelling, still accepted with a warning: --appset is the one spelling of every command.
    'app-set': { type: 'string', deprecated: 'appset' },
    selector: { type: 'string' },
  },
};

export const describe: CommandDescription = describeHubCommand(SPEC);

export function run(argv: string[]): Promise<number> {
  return runPins(argv, undefined);
}

/** `flotilla rollback TARGET REVISION --reason …`: the same as `flotilla pins add`. */
export function runAdd(argv: string[]): Promise<number> {
  return runPins(argv, 'add');
}

function runPins(argv: string[], forced: 'add' | undefined): Promise<number> {
  // `flotilla rollback` lists nothing, whatever its first argument: it takes no -o wide.
  const spec = forced ? { ...SPEC, listings: [] } : SPEC;
  return runHubCommand(argv, spec, async ({ values, positionals, output, client }) => {
    const [sub = 'list', ...rest] = forced ? [forced, ...positionals] : positionals;
    if (sub !== 'add' && values['until'] !== undefined)
      throw new UsageError('--until applies to pins add only');
    const appSet = stringValue(values['appset']);
    const selector = parseSelector(stringValue(values['selector']));
    if (selector && appSet === undefined) throw new UsageError('--selector needs --appset');
    switch (sub) {
      case 'list': {
        expectPositionals(rest, [], 'flotilla pins list');
        const pins = await client.request<PinView[]>('GET', '/api/v1/pins');
        printResult(pins, output, (wide) => pinTable(pins, wide));
        return 0;
      }
      case 'add': {
        const reason = stringValue(values['reason']);
        if (!reason)
          throw new UsageError(`--reason is required (it goes to the audit log); usage: ${ADD_USAGE}`);
        const until = stringValue(values['until']);
        if (appSet !== undefined) {
          const [revision = ''] = expectPositionals(rest, ['REVISION'], ADD_USAGE);
          const pinned = await client.request<PinView[]>(
            'POST',
            `/api/v1/appsets/${encodeURIComponent(appSet)}/pin`,
            {
              revision,
              reason,
              ...(until !== undefined && { expiresAt: until }),
              ...(selector && { clusterSelector: selector }),
            },
          );
          printResult(pinned, output, () => pinTable(pinned));
          return 0;
        }
        const [target = '', revision = ''] = expectPositionals(rest, ['TARGET', 'REVISION'], ADD_USAGE);
        const pin = await client.request<PinView>(
          'POST',
          `/api/v1/targets/${encodeURIComponent(target)}/pin`,
          {
            revision,
            reason,
            ...(until !== undefined && { expiresAt: until }),
          },
        );
        printResult(pin, output, () =>
          [
            `Pinned ${pin.target} at ${shortSha(pin.revision)} (${pin.bundleDigest})${pin.expiresAt ? ` until ${pin.expiresAt}` : ''}.`,
            `Remove it: flotilla pins remove ${pin.target} --reason '…'`,
          ].join('\n'),
        );
        return 0;
      }
      case 'remove': {
        const reason = stringValue(values['reason']);
        if (!reason)
          throw new UsageError(`--reason is required (it goes to the audit log); usage: ${REMOVE_USAGE}`);
        if (appSet !== undefined) {
          expectPositionals(rest, [], REMOVE_USAGE);
          const removed = await client.request<{ unpinned: string[] }>(
            'DELETE',
            `/api/v1/appsets/${encodeURIComponent(appSet)}/pin`,
            { reason, ...(selector && { clusterSelector: selector }) },
          );
          printResult(
            removed,
            output,
            () => `Unpinned ${removed.unpinned.length} target(s): ${removed.unpinned.join(', ')}`,
          );
          return 0;
        }
        const target = expectName(rest, REMOVE_USAGE);
        await client.request('DELETE', `/api/v1/targets/${encodeURIComponent(target)}/pin`, { reason });
        printResult(
          { target, unpinned: true },
          output,
          () => `Unpinned ${target}; it follows its release again.`,
        );
        return 0;
      }
      default:
        throw new UsageError(`unknown sub-command '${sub}'; expected list, add or remove`);
    }
  });
}

const PIN_COLUMNS: Column<PinView>[] = [
  { header: 'TARGET', cell: (p) => p.target },
  { header: 'REVISION', cell: (p, wide) => (wide ? p.revision : shortSha(p.revision)) },
  { header: 'BUNDLE', cell: (p) => p.bundleDigest, wide: true },
  { header: 'BY', cell: (p) => p.actor },
  { header: 'SINCE', cell: (p) => p.createdAt },
  {
    header: 'EXPIRES',
    cell: (p) => (p.expiresAt ? `${p.expiresAt}${p.expired ? ' (expired)' : ''}` : 'never'),
  },
  { header: 'REASON', cell: (p) => p.reason },
];

export function pinTable(pins: PinView[], wide = false): string {
  return columnsTable(PIN_COLUMNS, pins, wide);
}
