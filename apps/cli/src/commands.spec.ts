import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type CommandDescription } from './command.js';
import { COMMANDS } from './commands.js';
import { freePort } from './fleet/free-port.js';
import { runInProcess } from './testing/run-in-process.js';

/**
 * The whole command set, as a user meets it: every command has --help (and each of its sub-commands
 * is in that help), every command describes its options for completion, and no two commands spell
 * one concept differently (`--appset` everywhere, `--since/--until` everywhere; old spellings live on
 * only as deprecated aliases).
 */
const visible = Object.entries(COMMANDS).filter(([, c]) => !c.hidden);

/** Concepts with one spelling: the first; the others may only be deprecated aliases. */
const SYNONYMS: string[][] = [
  ['appset', 'app-set', 'application-set', 'applicationset'],
  ['since', 'from', 'after'],
  ['until', 'to'],
  ['output', 'format', 'out-format'],
  ['selector', 'label-selector'],
];

/** Where a word of SYNONYMS means something else, and why. */
const OTHER_MEANINGS: Record<string, string[]> = {
  // revert --to REVISION: the revision to go back to, not a time.
  revert: ['to'],
};

/**
 * Commands that print no result to format: completion prints a shell script; demo and sim run
 * services until interrupted and print progress.
 */
const WITHOUT_OUTPUT_FORMATS = ['completion', 'demo', 'sim'];

/** What a listing needs besides its name to get as far as asking the hub. */
const LISTING_ARGUMENTS: Record<string, string[]> = {
  'rollouts status': ['web'],
  'windows history': ['eu-night-freeze'],
  'break-glass record': ['4'],
  'fleet-sources show': ['fs1'],
  'operations list': ['web-eu1'],
};

/** The offline commands of CLI.md, whose `-o` is a public contract: table, json and yaml only. */
const OFFLINE_CONTRACT = ['health', 'generate', 'windows', 'diff', 'render'];

async function descriptions(): Promise<[string, CommandDescription][]> {
  const out: [string, CommandDescription][] = [];
  for (const [name, entry] of visible) {
    const { describe: description } = await entry.load();
    if (!description) throw new Error(`flotilla ${name} does not describe its options`);
    out.push([name, description]);
  }
  return out;
}

describe('the flotilla command set', () => {
  let all: [string, CommandDescription][];
  const savedConfig = process.env['FLOTILLA_CONFIG'];
  beforeAll(async () => {
    // --help of a hub-backed command must not depend on the person's own contexts.
    process.env['FLOTILLA_CONFIG'] = '/nonexistent/flotilla.yaml';
    all = await descriptions();
  });
  afterAll(() => {
    if (savedConfig === undefined) delete process.env['FLOTILLA_CONFIG'];
    else process.env['FLOTILLA_CONFIG'] = savedConfig;
  });

  it('spells every option one way: no two spellings of one name or one concept', () => {
    const spellings = new Map<string, Set<string>>();
    const types = new Map<string, Set<string>>();
    const shorts = new Map<string, Set<string>>();
    for (const [command, { options }] of all) {
      for (const [long, option] of Object.entries(options)) {
        if (option.deprecated !== undefined) {
          expect(
            options[option.deprecated],
            `${command} --${long} is deprecated for a missing option`,
          ).toBeDefined();
          continue;
        }
        const key = long.replace(/[-_]/g, '').toLowerCase();
        spellings.set(key, (spellings.get(key) ?? new Set()).add(long));
        types.set(long, (types.get(long) ?? new Set()).add(option.type));
        if (option.short) shorts.set(option.short, (shorts.get(option.short) ?? new Set()).add(long));
        for (const [canonical, ...others] of SYNONYMS) {
          if (others.includes(long) && !OTHER_MEANINGS[command]?.includes(long))
            throw new Error(`flotilla ${command} --${long}: the spelling of this concept is --${canonical}`);
        }
      }
    }
    const twoSpellings = [...spellings.values()].filter((s) => s.size > 1).map((s) => [...s]);
    expect(twoSpellings).toEqual([]);
    const twoTypes = [...types].filter(([, t]) => t.size > 1).map(([name]) => name);
    expect(twoTypes).toEqual([]);
    // -o is always --output, -f always --file, -h always --help.
    const twoMeanings = [...shorts]
      .filter(([, longs]) => longs.size > 1)
      .map(([s, longs]) => [s, [...longs]]);
    expect(twoMeanings).toEqual([]);
  });

  it('gives every command -o/--output and -h/--help', () => {
    for (const [command, { options }] of all) {
      expect(options['help']?.short, `flotilla ${command} -h`).toBe('h');
      if (!WITHOUT_OUTPUT_FORMATS.includes(command))
        expect(options['output']?.short, `flotilla ${command} -o`).toBe('o');
    }
  });

  it('lets every listing print -o wide: it goes on to ask the hub', async () => {
    const hub = `http://127.0.0.1:${await freePort()}`;
    const asked: string[] = [];
    for (const [name, description] of all) {
      // A command with a `list` lists there (and so takes -o wide); contexts are the CLI's own file.
      if (description.subcommands?.includes('list') && name !== 'context')
        expect(description.listings, `flotilla ${name} list takes -o wide`).toContain('list');
      const command = await COMMANDS[name]!.load();
      const run = (argv: string[]) => command.run(argv);
      for (const listing of description.listings ?? []) {
        const argv = [...(listing ? [listing] : []), ...(LISTING_ARGUMENTS[`${name} ${listing}`] ?? [])];
        const r = await runInProcess(run, [...argv, '-o', 'wide', '--hub', hub]);
        const shown = `flotilla ${name} ${argv.join(' ')} -o wide`;
        expect(r.err, shown).toMatch(new RegExp(`^flotilla ${name}: cannot reach the hub at ${hub}`));
        expect(r.code, shown).toBe(1);
        asked.push(`${name} ${listing}`.trim());
      }
    }
    expect(asked.sort()).toEqual(
      [
        'appsets',
        'appsets list',
        'audit',
        'audit list',
        'break-glass',
        'break-glass list',
        'break-glass record',
        'chart-repositories',
        'chart-repositories list',
        'clusters',
        'clusters list',
        'fleet-sources',
        'fleet-sources list',
        'fleet-sources show',
        'history',
        'notifications deliveries',
        'notifications destinations',
        'notifications policies',
        'operations list',
        'pins',
        'pins list',
        'projects',
        'projects list',
        'repositories',
        'repositories list',
        'rollouts',
        'rollouts list',
        'rollouts status',
        'targets',
        'tokens',
        'tokens list',
        'windows history',
        'windows list',
      ].sort(),
    );
  });

  it('refuses -o wide elsewhere (exit 2) naming the values -o takes, before asking the hub', async () => {
    const hub = `http://127.0.0.1:${await freePort()}`;
    for (const [name, description] of all) {
      if (WITHOUT_OUTPUT_FORMATS.includes(name)) continue;
      const listings = description.listings ?? [];
      const others = ['', ...(description.subcommands ?? [])].filter((sub) => !listings.includes(sub));
      const command = await COMMANDS[name]!.load();
      const run = (argv: string[]) => command.run(argv);
      for (const sub of others) {
        // `diff` and `windows` alone are CLI.md's offline commands, which take no --hub.
        const offline = OFFLINE_CONTRACT.includes(name) && sub === '';
        const hubOptions = description.options['hub'] && !offline ? ['--hub', hub] : [];
        // `policy` alone takes no options: its sub-command comes first.
        if (name === 'policy' && sub === '') continue;
        const r = await runInProcess(run, [...(sub ? [sub] : []), '-o', 'wide', ...hubOptions]);
        const shown = `flotilla ${name} ${sub} -o wide`;
        expect(r.code, shown).toBe(2);
        expect(r.out, shown).toBe('');
        expect(r.err, shown).toMatch(/: -o (wide is for listings|must be)\b.*json/);
        if (offline) expect(r.err, shown).toBe("flotilla: -o must be json, yaml or table, not 'wide'\n");
      }
    }
  });

  it.each(visible.map(([name]) => name))(
    'flotilla %s --help prints its usage, its sub-commands, exit 0',
    async (name) => {
      const entry = COMMANDS[name]!;
      const command = await entry.load();
      const description = command.describe;
      const run = (argv: string[]) => command.run(argv);
      const help = await runInProcess(run, ['--help']);
      expect(help.code).toBe(0);
      expect(help.err).toBe('');
      expect(help.out.toLowerCase()).toContain('usage: flotilla');
      for (const sub of description?.subcommands ?? []) {
        expect(help.out, `flotilla ${name} --help names ${sub}`).toMatch(new RegExp(`\\b${sub}\\b`));
        const subHelp = await runInProcess(run, [sub, '--help']);
        expect(subHelp.code, `flotilla ${name} ${sub} --help`).toBe(0);
        expect(subHelp.out).toMatch(new RegExp(`\\b${sub}\\b`));
      }
    },
  );
});
