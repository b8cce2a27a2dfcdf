import { type CommandDescription, type CommandEntry } from '../command.js';
import { UsageError } from '../offline/offline-command.js';

/**
 * `flotilla completion bash|zsh|fish` prints a script that the shell sources once; on every Tab the
 * script asks `flotilla __complete WORD…` (the words typed before the cursor) for the candidates, so
 * that completion always knows the installed CLI's commands, sub-commands and options, as cobra's
 * completion does for kubectl. An option that takes a value completes nothing, leaving the shell's
 * own file-name completion.
 */

export const SHELLS = ['bash', 'zsh', 'fish'] as const;
type Shell = (typeof SHELLS)[number];

const USAGE = [
  'usage: flotilla completion bash|zsh|fish',
  '',
  'Prints the shell completion script for flotilla. To load it:',
  '  bash:  source <(flotilla completion bash)        (or save it in /etc/bash_completion.d/flotilla)',
  '  zsh:   source <(flotilla completion zsh)         (or save it as _flotilla in a directory of $fpath)',
  '  fish:  flotilla completion fish | source         (or save it in ~/.config/fish/completions/flotilla.fish)',
  'It completes commands, sub-commands and options; the candidates come from the installed CLI.',
].join('\n');

export const describe: CommandDescription = {
  options: { help: { type: 'boolean', short: 'h' } },
  subcommands: SHELLS,
};

export function run(argv: string[]): Promise<number> {
  try {
    const [shell, ...extra] = argv;
    if (argv.includes('--help') || argv.includes('-h')) {
      process.stdout.write(`${USAGE}\n`);
      return Promise.resolve(0);
    }
    if (shell === undefined)
      throw new UsageError(`missing SHELL (bash, zsh or fish); ${USAGE.split('\n')[0]}`);
    if (!isShell(shell)) throw new UsageError(`unknown shell '${shell}': expected bash, zsh or fish`);
    if (extra.length > 0) throw new UsageError(`unexpected argument '${extra[0]}'; ${USAGE.split('\n')[0]}`);
    process.stdout.write(script(shell));
    return Promise.resolve(0);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    console.error(`flotilla completion: ${err.message}`);
    return Promise.resolve(2);
  }
}

function isShell(s: string): s is Shell {
  return (SHELLS as readonly string[]).includes(s);
}

function script(shell: Shell): string {
  switch (shell) {
    case 'bash':
      return [
        '# flotilla completion for bash: source <(flotilla completion bash)',
        '_flotilla() {',
        '  local cur="${COMP_WORDS[COMP_CWORD]}"',
        "  local IFS=$'\\n'",
        '  COMPREPLY=($(compgen -W "$(flotilla __complete "${COMP_WORDS[@]:1:COMP_CWORD-1}" 2>/dev/null)" -- "$cur"))',
        '}',
        'complete -o default -F _flotilla flotilla',
        '',
      ].join('\n');
    case 'zsh':
      return [
        '#compdef flotilla',
        '# flotilla completion for zsh: source <(flotilla completion zsh)',
        '_flotilla() {',
        '  local -a candidates',
        '  candidates=("${(@f)$(flotilla __complete "${(@)words[2,CURRENT-1]}" 2>/dev/null)}")',
        '  if (( ${#candidates} )) && [[ -n "${candidates[1]}" ]]; then',
        '    compadd -- "${candidates[@]}"',
        '  else',
        '    _files',
        '  fi',
        '}',
        'if [[ "${funcstack[1]}" = _flotilla ]]; then _flotilla "$@"; else compdef _flotilla flotilla; fi',
        '',
      ].join('\n');
    case 'fish':
      return [
        '# flotilla completion for fish: flotilla completion fish | source',
        "complete -c flotilla -f -a '(flotilla __complete (commandline -opc)[2..-1] 2>/dev/null)'",
        '',
      ].join('\n');
  }
}

/**
 * The candidates after `words` (what was typed after `flotilla`, up to the word being completed):
 * command names first; then a command's sub-commands (before any other argument) and its options;
 * nothing after an option that takes a value (the shell completes a file name).
 */
export async function candidates(
  commands: Readonly<Record<string, CommandEntry>>,
  words: string[],
): Promise<string[]> {
  const [name, ...rest] = words;
  if (name === undefined)
    return Object.entries(commands)
      .filter(([, c]) => !c.hidden)
      .map(([n]) => n)
      .sort();
  const entry = commands[name];
  if (!entry) return [];
  const description = (await entry.load()).describe;
  if (!description) return [];
  const previous = rest.at(-1);
  if (previous !== undefined && takesValue(description, previous)) return [];
  const options = Object.entries(description.options)
    .filter(([, o]) => o.deprecated === undefined)
    .map(([long]) => `--${long}`)
    .sort();
  const positionals = rest.filter(
    (w, i) => !w.startsWith('-') && !(i > 0 && takesValue(description, rest[i - 1]!)),
  );
  const subcommands = positionals.length === 0 ? [...(description.subcommands ?? [])] : [];
  return [...subcommands, ...options];
}

function takesValue(description: CommandDescription, word: string): boolean {
  if (word.includes('=')) return false;
  const option = word.startsWith('--')
    ? description.options[word.slice(2)]
    : Object.values(description.options).find((o) => word === `-${o.short}`);
  return option?.type === 'string';
}

/** `flotilla __complete WORD…`: the candidates, one a line, for the scripts above. */
export async function runComplete(
  commands: Readonly<Record<string, CommandEntry>>,
  argv: string[],
): Promise<number> {
  const found = await candidates(commands, argv);
  if (found.length > 0) process.stdout.write(`${found.join('\n')}\n`);
  return 0;
}
