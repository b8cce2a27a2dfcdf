import { type CommandDescription } from '../command.js';
import {
  DELIVERY_STATUSES,
  notificationDeliveryViewSchema,
  notificationDestinationViewSchema,
  notificationPolicyViewSchema,
  type NotificationDeliveryView,
  type NotificationDestinationView,
  type NotificationPolicyView,
} from '@flotilla/contract';
import { z } from 'zod';
import { readOneDocument, UsageError } from '../offline/offline-command.js';
import {
  age,
  columnsTable,
  expectName,
  expectPositionals,
  printResult,
  describeHubCommand,
  runHubCommand,
  stringValue,
  type Column,
  type HubCommandSpec,
} from './hub-command.js';

const FILTERS = ['status', 'policy', 'destination', 'trigger', 'limit'] as const;

const SPEC: HubCommandSpec = {
  name: 'notifications',
  subcommands: [
    'deliveries',
    'destinations',
    'policies',
    'apply-destination',
    'apply-policy',
    'delete-destination',
    'delete-policy',
  ],
  listings: ['deliveries', 'destinations', 'policies'],
  usage: [
    'usage: flotilla notifications deliveries [--status Collecting|Pending|Sent|Failed] [--policy P]',
    '                                         [--destination D] [--trigger T] [--limit N]',
    '       flotilla notifications destinations',
    '       flotilla notifications policies',
    '       flotilla notifications apply-destination -f FILE | apply-policy -f FILE',
    '       flotilla notifications delete-destination NAME | delete-policy NAME',
    '',
    'What the hub told whom: each delivery once (however many hub replicas run), its attempts and the',
    'last error. Destinations show their settings, never their secrets. `apply-destination` creates or',
    'replaces a destination from a YAML or JSON file (the API body: apps/hub/README.md), and',
    '`apply-policy` a NotificationPolicy document (also kept in a fleet repository).',
    '-o wide adds: to deliveries their id, when they may be sent and when they were; to destinations',
    'when they were created and updated; to policies the appsets, projects and digest window they',
    'apply and the fleet repository commit that manages them.',
  ].join('\n'),
  options: {
    ...Object.fromEntries(FILTERS.map((f) => [f, { type: 'string' as const }])),
    file: { type: 'string', short: 'f' },
  },
};

export const describe: CommandDescription = describeHubCommand(SPEC);

export function run(argv: string[]): Promise<number> {
  return runHubCommand(argv, SPEC, async ({ values, positionals, output, client }) => {
    const [sub, ...rest] = positionals;
    const filters = FILTERS.filter((f) => values[f] !== undefined);
    if (sub !== 'deliveries' && filters.length > 0)
      throw new UsageError(`--${filters[0]} applies to 'notifications deliveries' only`);
    const applies = sub === 'apply-destination' || sub === 'apply-policy';
    if (!applies && values['file'] !== undefined)
      throw new UsageError(`-f applies to 'notifications apply-destination' and 'apply-policy' only`);
    switch (sub) {
      case 'deliveries': {
        expectPositionals(rest, [], 'flotilla notifications deliveries [filters]');
        const status = stringValue(values['status']);
        if (status !== undefined && !(DELIVERY_STATUSES as readonly string[]).includes(status))
          throw new UsageError(`--status must be one of ${DELIVERY_STATUSES.join(', ')}, not '${status}'`);
        const limit = stringValue(values['limit']);
        if (limit !== undefined && !/^[1-9]\d*$/.test(limit))
          throw new UsageError(`--limit must be a whole number, not '${limit}'`);
        const query = new URLSearchParams();
        for (const f of FILTERS) {
          const v = stringValue(values[f]);
          if (v !== undefined) query.set(f, v);
        }
        const qs = query.size > 0 ? `?${query.toString()}` : '';
        const deliveries = z
          .array(notificationDeliveryViewSchema)
          .parse(await client.request('GET', `/api/v1/notifications/deliveries${qs}`));
        printResult(deliveries, output, (wide) => deliveryTable(deliveries, wide));
        return 0;
      }
      case 'destinations': {
        expectPositionals(rest, [], 'flotilla notifications destinations');
        const list = z
          .array(notificationDestinationViewSchema)
          .parse(await client.request('GET', '/api/v1/notifications/destinations'));
        printResult(list, output, (wide) => columnsTable(DESTINATION_COLUMNS, list, wide));
        return 0;
      }
      case 'policies': {
        expectPositionals(rest, [], 'flotilla notifications policies');
        const list = z
          .array(notificationPolicyViewSchema)
          .parse(await client.request('GET', '/api/v1/notifications/policies'));
        printResult(list, output, (wide) => columnsTable(POLICY_COLUMNS, list, wide));
        return 0;
      }
      case 'apply-destination':
      case 'apply-policy': {
        expectPositionals(rest, [], `flotilla notifications ${sub} -f FILE`);
        const file = stringValue(values['file']);
        if (file === undefined) throw new UsageError(`${sub} needs -f FILE (YAML or JSON)`);
        const doc = readOneDocument(file);
        const verbOf = (status: number) => (status === 201 ? 'created' : 'updated');
        if (sub === 'apply-destination') {
          const answer = await client.send('POST', '/api/v1/notifications/destinations', doc);
          const saved = notificationDestinationViewSchema.parse(answer.body);
          printResult(
            saved,
            output,
            () => `Notification destination ${saved.name} ${verbOf(answer.status)}.`,
          );
        } else {
          const answer = await client.send('POST', '/api/v1/notifications/policies', doc);
          const saved = notificationPolicyViewSchema.parse(answer.body);
          printResult(
            saved,
            output,
            () => `Notification policy ${saved.metadata.name} ${verbOf(answer.status)}.`,
          );
        }
        return 0;
      }
      case 'delete-destination':
      case 'delete-policy': {
        const kind = sub === 'delete-destination' ? 'destinations' : 'policies';
        const name = expectName(rest, `flotilla notifications ${sub} NAME`);
        await client.request('DELETE', `/api/v1/notifications/${kind}/${encodeURIComponent(name)}`);
        printResult({ deleted: name }, output, () => `Deleted notification ${kind.slice(0, -1)} ${name}.`);
        return 0;
      }
      case undefined:
        throw new UsageError('missing sub-command; expected deliveries, destinations or policies');
      default:
        throw new UsageError(`unknown sub-command '${sub}'; expected ${SPEC.subcommands?.join(', ')}`);
    }
  });
}

/** Where a destination sends, from its shown settings (never a secret). */
function where(config: Record<string, unknown>): string {
  const c = config as {
    url?: string;
    host?: string;
    port?: number;
    provider?: string;
    apiUrl?: string;
    to?: string[];
  };
  if (c.to) return `${c.to.join(',')} via ${c.host}:${c.port}`;
  if (c.provider) return `${c.provider} ${c.apiUrl ?? ''}`.trim();
  return c.url ?? c.host ?? '';
}

const DELIVERY_COLUMNS: Column<NotificationDeliveryView>[] = [
  { header: 'ID', cell: (d) => d.id, wide: true },
  { header: 'CREATED', cell: (d) => `${age(d.createdAt)} ago` },
  { header: 'POLICY', cell: (d) => d.policy },
  { header: 'TRIGGER', cell: (d) => d.trigger },
  { header: 'DESTINATION', cell: (d) => d.destination ?? '(deleted)' },
  { header: 'STATUS', cell: (d) => d.status },
  { header: 'EVENTS', cell: (d) => String(d.eventCount) },
  { header: 'ATTEMPTS', cell: (d) => String(d.attempts) },
  { header: 'SEND AFTER', cell: (d) => d.sendAfter, wide: true },
  { header: 'SENT', cell: (d) => d.sentAt ?? '-', wide: true },
  { header: 'LAST ERROR', cell: (d) => d.lastError ?? '' },
];

export function deliveryTable(deliveries: NotificationDeliveryView[], wide = false): string {
  return columnsTable(DELIVERY_COLUMNS, deliveries, wide);
}

const DESTINATION_COLUMNS: Column<NotificationDestinationView>[] = [
  { header: 'NAME', cell: (d) => d.name },
  { header: 'TYPE', cell: (d) => d.type },
  { header: 'WHERE', cell: (d) => where(d.config) },
  { header: 'SECRET', cell: (d) => (d.hasSecret ? 'sealed' : '-') },
  { header: 'CREATED', cell: (d) => d.createdAt, wide: true },
  { header: 'UPDATED', cell: (d) => d.updatedAt, wide: true },
  { header: 'CREATED BY', cell: (d) => d.createdBy },
];

/** A list of the policy's spec (loose in the view), `*` when empty: the policy then takes every one. */
function specList(p: NotificationPolicyView, key: string): string {
  const value = (p.spec as Record<string, unknown>)[key];
  return Array.isArray(value) && value.length > 0 ? value.map(String).join(',') : '*';
}

const POLICY_COLUMNS: Column<NotificationPolicyView>[] = [
  { header: 'NAME', cell: (p) => p.metadata.name },
  { header: 'TRIGGERS', cell: (p) => p.spec.triggers.join(',') },
  { header: 'DESTINATIONS', cell: (p) => p.spec.destinations.join(',') },
  { header: 'APPSETS', cell: (p) => specList(p, 'appSets'), wide: true },
  { header: 'PROJECTS', cell: (p) => specList(p, 'projects'), wide: true },
  {
    header: 'DIGEST WINDOW',
    cell: (p) => {
      const window = (p.spec as Record<string, unknown>)['digestWindow'];
      return typeof window === 'string' ? window : '-';
    },
    wide: true,
  },
  { header: 'MANAGED BY', cell: (p) => p.managedBy },
  { header: 'SOURCE COMMIT', cell: (p) => p.sourceCommit ?? '-', wide: true },
];
