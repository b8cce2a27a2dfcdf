import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { type FleetFile } from '../fleet-file.js';

/** Every file under `root` (hidden ones included: the lib must skip them itself), as FleetFiles. */
export function readTree(root: string, skip: (path: string) => boolean = () => false): FleetFile[] {
  const out: FleetFile[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const full = join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else {
        const path = relative(root, full).split(sep).join('/');
        if (!skip(path)) out.push({ path, content: readFileSync(full, 'utf8') });
      }
    }
  };
  walk(root);
  return out;
}
