import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { fleetJsonSchemas } from './json-schemas.js';

const PUBLISHED = new URL('../../../docs/schemas/', import.meta.url).pathname;
/** Schemas in the same directory that other libs publish (and check). */
const OTHERS = new Set(['plan-report.schema.json']);

describe('published JSON Schemas (docs/schemas)', () => {
  const generated = fleetJsonSchemas();

  it('are up to date with the zod schemas (run `npm run schemas -w @flotilla/fleet-config` if not)', () => {
    expect(
      readdirSync(PUBLISHED)
        .filter((f) => f.endsWith('.schema.json') && !OTHERS.has(f))
        .sort(),
    ).toEqual(Object.keys(generated).sort());
    for (const [file, schema] of Object.entries(generated)) {
      const committed: unknown = JSON.parse(readFileSync(`${PUBLISHED}${file}`, 'utf8'));
      expect(committed, `docs/schemas/${file} is stale`).toEqual(schema);
    }
  });

  it('describe what people write: defaulted fields are optional, unknown fields refused', () => {
    const window = generated['sync-window.schema.json'] as {
      required: string[];
      properties: { spec: { required: string[]; additionalProperties: boolean } };
    };
    expect(window.required).toEqual(['apiVersion', 'kind', 'metadata', 'spec']);
    expect(window.properties.spec.required).toEqual(['kind', 'schedule', 'duration']);
    expect(window.properties.spec.additionalProperties).toBe(false);
  });
});
