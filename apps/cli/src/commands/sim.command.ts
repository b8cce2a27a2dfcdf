import { type CommandDescription } from '../command.js';
import { parseOptions } from '../options/parse-options.js';
import { startSimFleet } from '@flotilla/kube-sim';

/**
 * `flotilla sim --clusters N --kubeconfig-dir DIR [--name-prefix P]` (CLI.md): serves N simulated
 * clusters from this process until SIGINT or SIGTERM. Long-running, so it parses its own args.
 */
const USAGE = 'usage: flotilla sim --clusters N --kubeconfig-dir DIR [--name-prefix P]';

const OPTIONS = {
  clusters: { type: 'string' },
  'kubeconfig-dir': { type: 'string' },
  'name-prefix': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export const describe: CommandDescription = { options: OPTIONS };

class SimUsageError extends Error {}

function parse(argv: string[]): { count: number; dir: string; prefix: string } {
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseOptions(argv, OPTIONS, { command: 'sim', allowPositionals: false }).values;
  } catch (err) {
    throw new SimUsageError((err as Error).message);
  }
  if (values['help']) throw new SimUsageError(USAGE);
  const clusters = values['clusters'];
  const dir = values['kubeconfig-dir'];
  if (typeof clusters !== 'string') throw new SimUsageError(`--clusters is required (${USAGE})`);
  if (!/^\d+$/.test(clusters) || Number(clusters) < 1)
    throw new SimUsageError(`--clusters must be a positive integer, not '${clusters}'`);
  if (typeof dir !== 'string' || dir === '')
    throw new SimUsageError(`--kubeconfig-dir is required (${USAGE})`);
  const prefix = typeof values['name-prefix'] === 'string' ? values['name-prefix'] : 'sim-';
  return { count: Number(clusters), dir, prefix };
}

export async function run(argv: string[]): Promise<number> {
  // `process.on`, not `once`: a `once` signal listener did not keep Node 20 from dying on SIGTERM here.
  let stop = (): void => undefined;
  const signalled = new Promise<void>((resolve) => (stop = resolve));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  try {
    return await serve(argv, signalled, (line) => process.stdout.write(line));
  } finally {
    process.off('SIGINT', stop);
    process.off('SIGTERM', stop);
  }
}

/** The command body: serves until `until` settles (the signals, in `run`), then stops every cluster. */
export async function serve(
  argv: string[],
  until: Promise<void>,
  write: (line: string) => void,
): Promise<number> {
  let args: { count: number; dir: string; prefix: string };
  try {
    args = parse(argv);
  } catch (err) {
    if (!(err instanceof SimUsageError)) throw err;
    if (err.message === USAGE && argv.some((a) => a === '--help' || a === '-h')) {
      write(`${USAGE}\n`);
      return 0;
    }
    console.error(`flotilla sim: ${err.message}`);
    return 2;
  }
  let fleet: Awaited<ReturnType<typeof startSimFleet>>;
  try {
    fleet = await startSimFleet({ count: args.count, namePrefix: args.prefix, kubeconfigDir: args.dir });
  } catch (err) {
    console.error(
      `flotilla sim: cannot start the clusters: ${err instanceof Error ? err.message : String(err)}`,
    );
    return 1;
  }
  write(`ready ${fleet.clusters.length}\n`);
  await until;
  await fleet.stop();
  return 0;
}
