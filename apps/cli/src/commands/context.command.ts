import { type CommandDescription } from '../command.js';
import { parseOptions, type OptionSpecs } from '../options/parse-options.js';
import { HUB_OUTPUT_FORMATS, parseOutputFormat, type OutputFormat } from '../options/output-format.js';
import { HubApiError, HubClient, HubUnreachableError } from '../fleet/hub-client.js';
import {
  cliConfigPath,
  contextNameSchema,
  hubUrlSchema,
  loadCliConfig,
  saveCliConfig,
  withContext,
  type CliContext,
} from '../fleet/cli-config.js';
import { UsageError } from '../offline/offline-command.js';
import {
  describeApiError,
  expectName,
  expectPositionals,
  firstLineOfStdin,
  formatTable,
  printResult,
} from './hub-command.js';

const CONTEXT_USAGE = [
  'usage: flotilla context [list]',
  '       flotilla context current',
  '       flotilla context use NAME',
  '       flotilla context set NAME --hub URL [--token T]',
  '       flotilla context delete NAME',
  '',
  "Named hubs, like kubectl's contexts, kept in $FLOTILLA_CONFIG, else",
  '$XDG_CONFIG_HOME/flotilla/config.yaml, else ~/.config/flotilla/config.yaml (mode 0600: it may hold',
  'tokens). Every hub-backed command talks to the current context unless --hub, --context,',
  '$FLOTILLA_HUB_URL or $FLOTILLA_CONTEXT say otherwise; a token is only sent to its own hub.',
].join('\n');

const LOGIN_USAGE = [
  'usage: flotilla login --hub URL [--token T | --token -] [--context NAME]',
  '',
  'Checks that the hub answers and accepts the token (from --token, `--token -` for the first line',
  'of standard input, or $FLOTILLA_TOKEN), then saves it as a context (default name: the hub host)',
  'and makes it current. Without a token it saves the hub alone (a development hub needs none).',
].join('\n');

const COMMON_OPTIONS = {
  output: { type: 'string', short: 'o' },
  help: { type: 'boolean', short: 'h' },
} as const;

const CONTEXT_OPTIONS = { hub: { type: 'string' }, token: { type: 'string' }, ...COMMON_OPTIONS } as const;

const LOGIN_OPTIONS = {
  hub: { type: 'string' },
  token: { type: 'string' },
  context: { type: 'string' },
  ...COMMON_OPTIONS,
} as const;

export const describe: CommandDescription = {
  options: CONTEXT_OPTIONS,
  subcommands: ['list', 'current', 'use', 'set', 'delete'],
};

export const describeLogin: CommandDescription = { options: LOGIN_OPTIONS };

function parse(
  command: string,
  argv: string[],
  options: OptionSpecs,
): { values: Record<string, string | boolean | undefined>; positionals: string[] } {
  const { values, positionals } = parseOptions(argv, options, { command, allowPositionals: true });
  return { values: values as Record<string, string | boolean | undefined>, positionals };
}

/** Contexts are the CLI's own file, not a hub listing: no wide table, nothing more to show. */
function outputOf(v: string | boolean | undefined): OutputFormat {
  return parseOutputFormat(v, HUB_OUTPUT_FORMATS);
}

function name(raw: string, what = 'NAME'): string {
  const r = contextNameSchema.safeParse(raw);
  if (!r.success) throw new UsageError(`${what} '${raw}': ${r.error.issues[0]!.message}`);
  return r.data;
}

function hub(raw: unknown): string {
  if (typeof raw !== 'string') throw new UsageError('--hub URL is required');
  const r = hubUrlSchema.safeParse(raw);
  if (!r.success) throw new UsageError(`--hub must be an http(s) URL, not '${raw}'`);
  return raw.replace(/\/+$/, '');
}

/** What a listing shows of a context: never its token, only whether it has one. */
const shown = (c: CliContext, current: string | undefined) => ({
  name: c.name,
  hub: c.hub,
  token: c.token ? 'set' : 'none',
  current: c.name === current,
});

async function guard(command: string, body: () => Promise<number>): Promise<number> {
  try {
    return await body();
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`flotilla ${command}: ${err.withExcerpt}`);
      return 2;
    }
    if (err instanceof HubApiError) {
      console.error(`flotilla ${command}: ${describeApiError(err)}`);
      return 1;
    }
    if (err instanceof HubUnreachableError) {
      console.error(`flotilla ${command}: ${err.message}`);
      return 1;
    }
    throw err;
  }
}

export function run(argv: string[]): Promise<number> {
  return guard('context', () => {
    const { values, positionals } = parse('context', argv, CONTEXT_OPTIONS);
    if (values.help) {
      process.stdout.write(`${CONTEXT_USAGE}\n`);
      return Promise.resolve(0);
    }
    const output = outputOf(values.output);
    const path = cliConfigPath();
    const [sub = 'list', ...rest] = positionals;
    if (sub !== 'set' && (values.hub !== undefined || values.token !== undefined))
      throw new UsageError(`--hub and --token apply to 'context set' only`);
    const config = loadCliConfig(path);
    switch (sub) {
      case 'list': {
        expectPositionals(rest, [], 'flotilla context list');
        const list = config.contexts.map((c) => shown(c, config.currentContext));
        printResult(list, output, () =>
          list.length === 0
            ? `No contexts in ${path}; add one with 'flotilla login --hub URL' or 'flotilla context set NAME --hub URL'.`
            : formatTable(
                ['CURRENT', 'NAME', 'HUB', 'TOKEN'],
                list.map((c) => [c.current ? '*' : '', c.name, c.hub, c.token]),
              ),
        );
        return Promise.resolve(0);
      }
      case 'current': {
        expectPositionals(rest, [], 'flotilla context current');
        if (!config.currentContext) throw new UsageError(`no current context in ${path}`);
        printResult({ name: config.currentContext }, output, () => config.currentContext!);
        return Promise.resolve(0);
      }
      case 'use': {
        const wanted = name(expectName(rest, 'flotilla context use NAME'));
        if (!config.contexts.some((c) => c.name === wanted)) {
          const known = config.contexts.map((c) => c.name).join(', ') || 'none';
          throw new UsageError(`no context '${wanted}' in ${path} (known: ${known})`);
        }
        saveCliConfig({ ...config, currentContext: wanted }, path);
        printResult({ name: wanted }, output, () => `Switched to context ${wanted}.`);
        return Promise.resolve(0);
      }
      case 'set': {
        const wanted = name(expectName(rest, 'flotilla context set NAME --hub URL [--token T]'));
        const existing = config.contexts.find((c) => c.name === wanted);
        const url = values.hub === undefined && existing ? existing.hub : hub(values.hub);
        const token = typeof values.token === 'string' ? values.token : existing?.token;
        const next = withContext(config, { name: wanted, hub: url, ...(token && { token }) });
        saveCliConfig({ ...next, currentContext: config.currentContext ?? wanted }, path);
        printResult(
          shown({ name: wanted, hub: url, token }, config.currentContext ?? wanted),
          output,
          () => `Context ${wanted} ${existing ? 'updated' : 'added'} (${url}).`,
        );
        return Promise.resolve(0);
      }
      case 'delete': {
        const wanted = name(expectName(rest, 'flotilla context delete NAME'));
        if (!config.contexts.some((c) => c.name === wanted))
          throw new UsageError(`no context '${wanted}' in ${path}`);
        const contexts = config.contexts.filter((c) => c.name !== wanted);
        const { currentContext, ...restConfig } = config;
        saveCliConfig(
          { ...restConfig, contexts, ...(currentContext && currentContext !== wanted && { currentContext }) },
          path,
        );
        printResult({ deleted: wanted }, output, () => `Deleted context ${wanted}.`);
        return Promise.resolve(0);
      }
      default:
        throw new UsageError(`unknown sub-command '${sub}'; expected list, current, use, set or delete`);
    }
  });
}

export function runLogin(argv: string[]): Promise<number> {
  return guard('login', async () => {
    const { values, positionals } = parse('login', argv, LOGIN_OPTIONS);
    if (values.help) {
      process.stdout.write(`${LOGIN_USAGE}\n`);
      return 0;
    }
    expectPositionals(positionals, [], 'flotilla login --hub URL [--token T] [--context NAME]');
    const output = outputOf(values.output);
    const url = hub(values.hub);
    const contextName = name(
      typeof values.context === 'string'
        ? values.context
        : new URL(url).host.toLowerCase().replace(/[^a-z0-9.]+/g, '-'),
      '--context',
    );
    // Read from stdin only when asked (`--token -`): a script's open stdin must never hang a login.
    const token =
      values['token'] === '-'
        ? await firstLineOfStdin()
        : ((typeof values['token'] === 'string' ? values['token'] : undefined) ??
          (process.env['FLOTILLA_TOKEN'] || undefined));
    // A listing every role may read: it proves both that the hub answers and that it takes the token
    // (one item: the hub need not read every cluster for that).
    await new HubClient(url, token).request('GET', '/api/v1/clusters?limit=1');
    const path = cliConfigPath();
    const config = withContext(loadCliConfig(path), { name: contextName, hub: url, ...(token && { token }) });
    saveCliConfig({ ...config, currentContext: contextName }, path);
    printResult(
      shown({ name: contextName, hub: url, token }, contextName),
      output,
      () =>
        `Logged in to ${url} as context ${contextName} (now current${token ? '' : ', no token'}); saved in ${path}.`,
    );
    return 0;
  });
}
