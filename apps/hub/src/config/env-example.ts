// The text of apps/hub/.env.example, generated from the hub's environment schema so it never drifts from the code.
import { hubEnvSchema } from './hub-env-schema.js';

/** `.env.example` text: every variable with its description and default (commented out when optional). */
export function renderEnvExample(): string {
  const lines = ['# Generated from apps/hub/src/config/hub-config.ts — do not edit by hand.', ''];
  for (const [name, schema] of Object.entries(hubEnvSchema.shape)) {
    const dflt = schema.safeParse(undefined);
    const shown = dflt.success && dflt.data !== undefined ? String(dflt.data) : '';
    lines.push(`# ${schema.description ?? ''}`);
    lines.push(dflt.success && dflt.data !== undefined ? `${name}=${shown}` : `# ${name}=`);
    lines.push('');
  }
  return lines.join('\n');
}
