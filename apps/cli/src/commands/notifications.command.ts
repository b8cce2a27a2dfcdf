import { type CommandDescription } from '../command.js';
import {
  DELIVERY_STATUSES,
  notificationDeliveryViewSchema,
  notificationDestinationViewSchema,
  notificationPolicyViewSchema,
  type NotificationDeliveryView,
} from '@flotilla/contract';
import { z } from 'zod';
import { UsageError } from '../offline/offline-command.js';
import {
  age,
  expectName,
  expectPositionals,
  formatTable,
  printResult,
  describeHubCommand,
  runHubCommand,
  stringValue,
  type HubCommandSpec,
} from './hub-command.js';

const FILTERS = ['status', 'policy', 'destination', 'trigger', 'limit'] as const;

const SPEC: HubCommandSpec = {
  name: 'notifications',
  subcommands: ['deliveries', 'destinations', 'policies', 'delete-destination', 'delete-policy'],
  usage: [
    'usage: flotilla notifications deliveries [--status Collecting|Pending|Sent|Failed] [--policy P]',
    '                                         [--destination D] [--trigger T] [--limit N]',
    '       flotilla notifications destinations',
    '       flotilla notifications policies',
    '       flotilla notifications delete-destination NAME | delete-policy NAME',
    '',
    'What the hub told whom: each delivery once (however many hub replicas run), its attempts and the',
    'last error. Destinations show their settings, never their secrets. Policies are created with',
    'the API or from a fleet repository (kind NotificationPolicy).',
  ].join('\n'),
  options: Object.fromEntries(FILTERS.map((f) => [f, { type: 'string' as const }])),
};

export const describe: CommandDescription = describeHubCommand(SPEC);

export function run(argv: string[]): Promise<number> {
  return runHubCommand(argv, SPEC, async ({ values, positionals, output, client }) => {
    const [sub, ...rest] = positionals;
    const filters = FILTERS.filter((f) => values[f] !== undefined);
    if (sub !== 'deliveries' && filters.length > 0)
      throw new UsageError(`--${filters[0]} applies to 'notifications deliveries' only`);
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
        printResult(deliveries, output, () => deliveryTable(deliveries));
        return 0;
      }
      case 'destinations': {
        expectPositionals(rest, [], 'flotilla notifications destinations');
        const list = z
          .array(notificationDestinationViewSchema)
          .parse(await client.request('GET', '/api/v1/notifications/destinations'));
        printResult(list, output, () =>
          formatTable(
            ['NAME', 'TYPE', 'WHERE', 'SECRET', 'CREATED BY'],
            list.map((d) => [d.name, d.type, where(d.config), d.hasSecret ? 'sealed' : '-', d.createdBy]),
          ),
        );
        return 0;
      }
      case 'policies': {
        expectPositionals(rest, [], 'flotilla notifications policies');
        const list = z
          .array(notificationPolicyViewSchema)
          .parse(await client.request('GET', '/api/v1/notifications/policies'));
        printResult(list, output, () =>
          formatTable(
            ['NAME', 'TRIGGERS', 'DESTINATIONS', 'MANAGED BY'],
            list.map((p) => [
              p.metadata.name,
              p.spec.triggers.join(','),
              p.spec.destinations.join(','),
              p.managedBy,
            ]),
          ),
        );
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
        throw new UsageError(
          `unknown sub-command '${sub}'; expected deliveries, destinations, policies, delete-destination or delete-policy`,
        );
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

function deliveryTable(deliveries: NotificationDeliveryView[]): string {
  return formatTable(
    ['CREATED', 'POLICY', 'TRIGGER', 'DESTINATION', 'STATUS', 'EVENTS', 'ATTEMPTS', 'LAST ERROR'],
    deliveries.map((d) => [
      `${age(d.createdAt)} ago`,
      d.policy,
      d.trigger,
      d.destination ?? '(deleted)',
      d.status,
      String(d.eventCount),
      String(d.attempts),
      d.lastError ?? '',
    ]),
  );
}
