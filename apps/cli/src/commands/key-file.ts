import { readFileSync } from 'node:fs';
import { UsageError } from '../offline/offline-command.js';

/** A key list given as a file (`--gpg-keys FILE`, `--allowed-signers FILE`); no file: an empty list. */
export function readKeyFile(file: string | undefined, flag: string): string {
  if (file === undefined) return '';
  try {
    return readFileSync(file, 'utf8');
  } catch (e) {
    throw new UsageError(`${flag}: cannot read ${file}: ${(e as Error).message}`);
  }
}
