#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { COMMANDS } from './commands.js';
import { CLI_VERSION } from './version.js';

/**
 * The `flotilla` program: commander finds the command (refusing an unknown one with the nearest
 * name), answers `--version` and `--help`, and hands the rest of the line to the command, which
 * parses its own options with the same parser (options/parse-options.ts). Commands load lazily so
 * that an offline call (`flotilla health …`) pays only for what it uses: acceptance suites run
 * thousands of them.
 */
function program(setExitCode: (code: number) => void): Command {
  const flotilla = new Command('flotilla')
    .usage('<command> [options]')
    .description('Flotilla: a multi-cluster GitOps fleet manager. Offline commands need no hub.')
    .version(CLI_VERSION, '--version', 'print the CLI version')
    .helpOption('-h, --help', 'print this help')
    .helpCommand('help [command]', "print a command's help")
    // Options after the command name are the command's own, never the program's (`flotilla sim --help`).
    .enablePositionalOptions()
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({
      // One line in our words: `flotilla: unknown command 'clusterz' (Did you mean clusters?)`.
      outputError: (message, write) =>
        write(
          `flotilla: ${message
            .replace(/^error: /, '')
            .replace(/\n(?=.)/g, ' ')
            .trimEnd()}\n`,
        ),
    })
    .addHelpText(
      'after',
      '\nflotilla <command> --help for its options and sub-commands; flotilla completion --help for Tab completion',
    )
    .configureHelp({ sortSubcommands: true, subcommandTerm: (command) => command.name() });
  for (const [name, entry] of Object.entries(COMMANDS)) {
    flotilla
      .command(name, { hidden: entry.hidden === true })
      .summary(entry.summary)
      .description(entry.summary)
      .helpOption(false)
      .allowUnknownOption()
      .allowExcessArguments()
      .passThroughOptions()
      .argument('[arguments...]')
      .action(async (args: string[]) => {
        const mod = await entry.load();
        setExitCode(await mod.run(args));
      });
  }
  return flotilla;
}

async function main(argv: string[]): Promise<number> {
  let code = 0;
  const flotilla = program((c) => (code = c));
  if (argv.length === 0) {
    // No command: the help, on stdout, and the exit code of a usage error (scripts that forgot the command).
    flotilla.outputHelp();
    return 2;
  }
  // `flotilla help NAME` is `flotilla NAME --help`: each command prints its own help.
  if (argv[0] === 'help' && argv[1] !== undefined && argv[1] in COMMANDS) argv = [argv[1], '--help'];
  try {
    await flotilla.parseAsync(argv, { from: 'user' });
    return code;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here with code 0; anything else is a usage error.
      return err.exitCode === 0 ? 0 : 2;
    }
    throw err;
  }
}

process.exitCode = await main(process.argv.slice(2));
