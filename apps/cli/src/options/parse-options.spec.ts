import { afterAll, afterEach, describe, expect, it, vi } from 'vitest';
import { UsageError } from '../usage-error.js';
import { parseOptions } from './parse-options.js';

const OPTIONS = {
  appset: { type: 'string' },
  'app-set': { type: 'string', deprecated: 'appset' },
  'dry-run': { type: 'boolean' },
  file: { type: 'string', short: 'f', multiple: true },
  output: { type: 'string', short: 'o', default: 'table' },
} as const;

describe('parseOptions', () => {
  const warnings: string[] = [];
  const error = vi.spyOn(console, 'error').mockImplementation((...args: unknown[]) => {
    warnings.push(args.join(' '));
  });
  afterEach(() => {
    warnings.length = 0;
  });
  afterAll(() => error.mockRestore());

  const parse = (argv: string[], allowPositionals = true) =>
    parseOptions(argv, OPTIONS, { command: 'history', allowPositionals });

  it('keys the values by long name, as parseArgs does, and keeps positionals in order', () => {
    const { values, positionals } = parse([
      'add',
      '-f',
      'a.yaml',
      'web',
      '--dry-run',
      '--file=b.yaml',
      '-ojson',
    ]);
    expect(values).toEqual({ file: ['a.yaml', 'b.yaml'], 'dry-run': true, output: 'json' });
    expect(positionals).toEqual(['add', 'web']);
    expect(parse([]).values).toEqual({ output: 'table' });
  });

  it('takes the value after -- as a positional', () => {
    expect(parse(['--', '--dry-run']).positionals).toEqual(['--dry-run']);
  });

  it.each([
    [['--apset', 'web'], "unknown option '--apset' (Did you mean --appset?)"],
    [['--appset'], "option '--appset <value>' argument missing"],
    [['-x'], "unknown option '-x'"],
  ])('%j is refused on one line naming the option', (argv, message) => {
    expect(() => parse(argv)).toThrow(new UsageError(message));
  });

  it('refuses an argument where the command takes only options, naming it', () => {
    expect(() => parse(['web'], false)).toThrow(
      new UsageError("unexpected argument 'web': flotilla history takes only options"),
    );
  });

  it('accepts an old spelling with a warning and gives its value to the new one', () => {
    expect(parse(['--app-set', 'web']).values).toEqual({ appset: 'web', output: 'table' });
    expect(warnings).toEqual(['flotilla history: --app-set is deprecated, use --appset']);
  });

  it('refuses both spellings at once', () => {
    expect(() => parse(['--app-set', 'web', '--appset', 'api'])).toThrow(
      new UsageError('--app-set is the old spelling of --appset: give one of them'),
    );
  });
});
