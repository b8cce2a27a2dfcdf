// Writes apps/hub/.env.example from the config schema, so the example never drifts from the code.
import { writeFileSync } from 'node:fs';
import { renderEnvExample } from './hub-config.js';

const target = new URL('../../.env.example', import.meta.url);
writeFileSync(target, renderEnvExample());
process.stdout.write(`wrote ${target.pathname}\n`);
