import { type CommandDescription } from '../command.js';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { stringify } from 'yaml';
import { UsageError } from '../offline/offline-command.js';
import {
  expectPositionals,
  printResult,
  describeHubCommand,
  runHubCommand,
  stringValue,
  type HubCommandSpec,
} from './hub-command.js';
import { exportFleetObjects, type ExportInput } from './fleet-export.js';

const SPEC: HubCommandSpec = {
  name: 'export',
  usage: [
    'usage: flotilla export [--dir DIR] [--include-git]',
    '',
    "Prints the hub's objects created through the API as YAML in the fleet-config kinds (Project,",
    'SyncWindow, ClusterGroup for cluster labels, ApplicationSet), ready to commit to a fleet',
    'repository; `flotilla validate DIR` checks the result. Objects a fleet repository already',
    'manages are left out unless --include-git.',
    '',
    '  --dir DIR       write one file per object under DIR (projects/, windows/, clusters/, appsets/)',
    '  --include-git   also export the objects fleet repositories manage',
  ].join('\n'),
  options: {
    dir: { type: 'string' },
    'include-git': { type: 'boolean' },
  },
};

export const describe: CommandDescription = describeHubCommand(SPEC);

export function run(argv: string[]): Promise<number> {
  return runHubCommand(argv, SPEC, async ({ values, positionals, output, client }) => {
    expectPositionals(positionals, [], 'flotilla export');
    const sources = await client.request<{ id: string }[]>('GET', '/api/v1/fleet-sources');
    const gitManaged = new Set<string>();
    for (const s of sources) {
      const detail = await client.request<{ objects: { kind: string; name: string }[] }>(
        'GET',
        `/api/v1/fleet-sources/${encodeURIComponent(s.id)}`,
      );
      for (const o of detail.objects) gitManaged.add(`${o.kind}/${o.name}`);
    }
    const input: ExportInput = {
      appSets: await client.everyPage('/api/v1/appsets'),
      projects: await client.request('GET', '/api/v1/projects'),
      windows: await client.request('GET', '/api/v1/windows'),
      clusters: await client.everyPage('/api/v1/clusters'),
      gitManaged,
      includeGit: values['include-git'] === true,
    };
    const objects = exportFleetObjects(input);
    const dir = stringValue(values['dir']);
    if (dir !== undefined) {
      if (dir === '') throw new UsageError('--dir needs a directory');
      for (const o of objects) {
        const path = join(dir, o.file);
        mkdirSync(dirname(path), { recursive: true });
        writeFileSync(path, stringify(o.object));
      }
      printResult(
        { dir, files: objects.map((o) => o.file) },
        output,
        () => `wrote ${objects.length} object(s) under ${dir}`,
      );
      return 0;
    }
    // The default output is the YAML stream itself (`flotilla export > fleet/exported.yaml`).
    printResult(
      objects.map((o) => o.object),
      output,
      () => objects.map((o) => `# ${o.file}\n${stringify(o.object)}`).join('---\n'),
    );
    return 0;
  });
}
