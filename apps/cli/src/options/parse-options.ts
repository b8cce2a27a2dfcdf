import { Command, CommanderError, Option } from 'commander';
import { type ParseArgsConfig, type parseArgs } from 'node:util';
import { UsageError } from '../usage-error.js';

/**
 * Every command's options are parsed here, by commander: one parser, so that every command refuses an
 * unknown option by its name (with the nearest known spelling), says which option lacks its value,
 * and accepts a renamed option's old spelling with a warning. Options are declared as for
 * `node:util`'s parseArgs (`{ type, short, multiple, default }`), and the values come back keyed by
 * their long name (`'dry-run'`), as parseArgs gives them.
 */

type ParseArgsOption = NonNullable<ParseArgsConfig['options']>[string];

/**
 * One option. `deprecated` names the option that replaced this spelling: the old one still works, its
 * value goes to the new one, and a warning says to use the new one. Deprecated spellings are hidden
 * from completion and from the option-spelling check.
 */
export type OptionSpec = ParseArgsOption & { deprecated?: string };

export type OptionSpecs = Record<string, OptionSpec>;

export type OptionValue = string | boolean | (string | boolean)[] | undefined;

/** The values as parseArgs would type them for these options. */
export type OptionValues<O extends OptionSpecs> = ReturnType<
  typeof parseArgs<{ options: O; strict: true; allowPositionals: true }>
>['values'];

export interface ParseOptionsSettings {
  /** For warnings: `flotilla <command>: --app-set is deprecated, use --appset`. */
  command: string;
  /** Arguments that are not options (sub-commands, names); refused when false. */
  allowPositionals: boolean;
}

export function parseOptions<const O extends OptionSpecs>(
  argv: readonly string[],
  options: O,
  settings: ParseOptionsSettings,
): { values: OptionValues<O>; positionals: string[] } {
  const parser = new Command(settings.command)
    .exitOverride()
    .configureOutput({ writeOut: () => undefined, writeErr: () => undefined, outputError: () => undefined })
    .helpOption(false)
    .showSuggestionAfterError(true)
    // Arguments are checked below, so that a refusal names the argument.
    .argument('[arguments...]');
  const attributes = new Map<string, string>();
  for (const [long, spec] of Object.entries(options)) {
    const flags = `${spec.short ? `-${spec.short}, ` : ''}--${long}${spec.type === 'string' ? ' <value>' : ''}`;
    const option = new Option(flags);
    if (spec.multiple)
      option.argParser((value: string, previous: unknown) => [
        ...(Array.isArray(previous) ? (previous as string[]) : []),
        value,
      ]);
    if (spec.default !== undefined) option.default(spec.default);
    parser.addOption(option);
    attributes.set(long, option.attributeName());
  }
  try {
    parser.parse([...argv], { from: 'user' });
  } catch (err) {
    if (err instanceof CommanderError)
      // One line, as every usage error: commander puts its "(Did you mean --x?)" on a second one.
      throw new UsageError(err.message.replace(/^error: /, '').replace(/\s*\n\s*/g, ' '));
    throw err;
  }
  const positionals = parser.args;
  if (!settings.allowPositionals && positionals.length > 0)
    throw new UsageError(
      `unexpected argument '${positionals[0]}': flotilla ${settings.command} takes only options`,
    );
  const parsed = parser.opts<Record<string, OptionValue>>();
  const values: Record<string, OptionValue> = {};
  for (const [long, attribute] of attributes) {
    if (parsed[attribute] !== undefined) values[long] = parsed[attribute];
  }
  for (const [old, spec] of Object.entries(options)) {
    const replacement = spec.deprecated;
    if (replacement === undefined || values[old] === undefined) continue;
    if (values[replacement] !== undefined && values[replacement] !== options[replacement]?.default)
      throw new UsageError(`--${old} is the old spelling of --${replacement}: give one of them`);
    console.error(`flotilla ${settings.command}: --${old} is deprecated, use --${replacement}`);
    values[replacement] = values[old];
    delete values[old];
  }
  return { values: values as OptionValues<O>, positionals };
}
