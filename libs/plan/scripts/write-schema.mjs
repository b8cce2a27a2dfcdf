// Writes docs/schemas/plan-report.schema.json from the built lib's zod schema of the plan report.
// Run with `npm run schema -w @flotilla/plan`; a spec fails when the committed file is stale.
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { planReportJsonSchema } from '../dist/index.js';

const out = fileURLToPath(new URL('../../../docs/schemas/plan-report.schema.json', import.meta.url));
writeFileSync(out, `${JSON.stringify(planReportJsonSchema(), null, 2)}\n`);
console.log('wrote docs/schemas/plan-report.schema.json');
