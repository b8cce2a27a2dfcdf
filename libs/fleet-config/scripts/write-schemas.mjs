// Writes the published JSON Schemas (docs/schemas/*.schema.json) from the built lib's zod schemas.
// Run with `npm run schemas -w @flotilla/fleet-config`; a spec fails when the committed files are stale.
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { fleetJsonSchemas, serializeSchema } from '../dist/index.js';

const out = fileURLToPath(new URL('../../../docs/schemas/', import.meta.url));
mkdirSync(out, { recursive: true });
const schemas = fleetJsonSchemas();
for (const [file, schema] of Object.entries(schemas)) {
  writeFileSync(`${out}${file}`, serializeSchema(schema));
  console.log(`wrote docs/schemas/${file}`);
}
console.log(`${Object.keys(schemas).length} schemas written`);
