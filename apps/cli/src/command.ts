/** Every `flotilla` sub-command module exports `run`, which resolves to the process exit code. */
export interface CommandModule {
  run(argv: string[]): Promise<number>;
}
