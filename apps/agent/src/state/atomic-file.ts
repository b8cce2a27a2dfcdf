import { randomUUID } from 'node:crypto';
import { open, readFile, rename, rm } from 'node:fs/promises';

/**
 * Write-then-rename in the same directory: a reader (or a restarted agent) sees the old file or the
 * new one, never half of one, even if the process dies mid-write.
 */
export async function writeFileAtomic(path: string, data: string, mode = 0o644): Promise<void> {
  const tmp = `${path}.${randomUUID()}.tmp`;
  const handle = await open(tmp, 'w', mode);
  try {
    await handle.writeFile(data);
    await handle.sync();
  } catch (err) {
    await handle.close();
    await rm(tmp, { force: true });
    throw err;
  }
  await handle.close();
  await rename(tmp, path);
}

/** The parsed JSON of a file, or undefined when it does not exist. Malformed JSON throws. */
export async function readJsonFile(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  return JSON.parse(text) as unknown;
}
