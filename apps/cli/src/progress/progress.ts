import yoctoSpinner, { type Spinner } from 'yocto-spinner';

/**
 * What a `--wait` shows while it waits: a spinner with a line of text on stderr, only for a person
 * at a terminal. Never with `-o json`/`yaml` (a script reads that) and never when stderr is not a
 * TTY (a pipe, a log, a test): then nothing at all is written, so what scripts see is unchanged.
 */
export interface Progress {
  /** Whether anything is shown (stderr is a TTY and the output is a table). */
  readonly shown: boolean;
  /** The line beside the spinner: what is being waited for, and how far it got. */
  update(text: string): void;
  /** Ends the spinner, leaving `text` with a mark: ✔ when `ok`, ✖ otherwise. */
  done(text: string, ok: boolean): void;
}

/** The stream it writes to: stderr, or a stand-in terminal in a test. */
export type ProgressStream = NodeJS.WritableStream & { isTTY?: boolean };

const SILENT: Progress = { shown: false, update: () => undefined, done: () => undefined };

/** Starts showing `text`, when `output` is a table and `stream` a terminal; else a reporter that says nothing. */
export function startProgress(
  text: string,
  output: string,
  stream: ProgressStream = process.stderr,
): Progress {
  if (stream.isTTY !== true || (output !== 'table' && output !== 'wide')) return SILENT;
  const spinner: Spinner = yoctoSpinner({ text, stream: stream as NodeJS.WriteStream }).start();
  return {
    shown: true,
    update: (next) => {
      spinner.text = next;
    },
    done: (final, ok) => {
      if (ok) spinner.success(final);
      else spinner.error(final);
    },
  };
}
