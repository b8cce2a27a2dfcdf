import { type OptionSpecs } from './options/parse-options.js';

/** Every `flotilla` sub-command module exports `run`, which resolves to the process exit code. */
export interface CommandModule {
  run(argv: string[]): Promise<number>;
  /** What shell completion and the option-spelling check read; the command's own parser uses the same. */
  describe?: CommandDescription;
}

/** A command's options (all of them, common ones included) and its sub-commands, for completion. */
export interface CommandDescription {
  options: OptionSpecs;
  subcommands?: readonly string[];
  /** The sub-commands that list and take `-o wide` (`''`: the command alone). */
  listings?: readonly string[];
}

/** A command of `flotilla`: what `flotilla --help` says of it, and its module, loaded when it runs. */
export interface CommandEntry {
  summary: string;
  load: () => Promise<CommandModule>;
  /** Left out of the help and of completion (the completion scripts' own helper). */
  hidden?: boolean;
}
