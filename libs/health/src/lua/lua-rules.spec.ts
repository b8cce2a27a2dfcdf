import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import { parse } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { createHealthAssessor } from '../health-assessor.js';
import { type HealthResult } from '../health-result.js';

/** The fixture directory uses Argo CD's resource_customizations layout, health_test.yaml files included. */
const root = join(import.meta.dirname, '../testdata/lua');
const scriptPaths = readdirSync(root, { recursive: true, encoding: 'utf8' }).filter((p) =>
  p.endsWith('health.lua'),
);
const scripts = new Map(
  scriptPaths.map((p) => [dirname(p).split(sep).join('/'), readFileSync(join(root, p), 'utf8')] as const),
);

interface HealthTests {
  tests: { healthStatus: HealthResult; inputPath: string }[];
}

const assessor = await createHealthAssessor({ luaScripts: scripts });
afterAll(() => assessor.close());

function lua(source: string, key = 'test.example.com/Thing') {
  return createHealthAssessor({ luaScripts: new Map([[key, source]]) });
}

const thing = { apiVersion: 'test.example.com/v1', kind: 'Thing', metadata: { name: 't' } };

describe('Lua rules in the resource_customizations layout', () => {
  for (const scriptPath of scriptPaths.sort()) {
    const dir = dirname(join(root, scriptPath));
    const { tests } = parse(readFileSync(join(dir, 'health_test.yaml'), 'utf8')) as HealthTests;
    describe(relative(root, dir), () => {
      for (const test of tests) {
        it(test.inputPath, () => {
          const obj: unknown = parse(readFileSync(join(dir, test.inputPath), 'utf8'));
          expect(assessor.assess(obj)).toEqual({
            status: test.healthStatus.status,
            message: test.healthStatus.message ?? '',
          });
        });
      }
    });
  }

  it('is what the example fleet repository ships: its cert-manager rule is the one tested here', () => {
    const example = join(
      import.meta.dirname,
      '../../../../examples/fleet-repo/resource_customizations/cert-manager.io/Certificate/health.lua',
    );
    expect(readFileSync(example, 'utf8')).toBe(scripts.get('cert-manager.io/Certificate'));
  });

  it('uses a wildcard directory only when no exact one exists', () => {
    const probe = { apiVersion: 'monitoring.example.org/v1', kind: 'Probe', metadata: { name: 'p' } };
    expect(assessor.assess(probe)?.message).toBe('No probe result yet');
    const other = { apiVersion: 'monitoring.example.org/v1', kind: 'Alert', metadata: { name: 'a' } };
    expect(assessor.assess(other)).toEqual({ status: 'Progressing', message: 'Provisioning ...' });
  });

  it('leaves kinds without a script to the built-in rules', () => {
    const pvc = { apiVersion: 'v1', kind: 'PersistentVolumeClaim', status: { phase: 'Bound' } };
    expect(assessor.assess(pvc)).toEqual({ status: 'Healthy', message: '' });
    expect(assessor.assess({ apiVersion: 'v1', kind: 'ConfigMap' })).toBeNull();
  });
});

describe('Lua semantics Argo CD scripts rely on', () => {
  it('prints whole numbers from the object without a decimal point', async () => {
    const a = await lua(
      `return { status = "Healthy", message = obj.spec.n .. " " .. tostring(obj.spec.n * 2) .. " " .. obj.spec.f }`,
    );
    expect(a.assess({ ...thing, spec: { n: 1, f: 2.5 } })).toEqual({ status: 'Healthy', message: '1 2 2.5' });
    a.close();
  });

  it('prints whole results of division like Lua 5.1 through tostring and string.format', async () => {
    const a = await lua(
      `return { status = "Healthy", message = tostring(obj.spec.n / 2) .. "|" .. string.format("%s", 9 / 3) }`,
    );
    expect(a.assess({ ...thing, spec: { n: 4 } })?.message).toBe('2|3');
    a.close();
  });

  it('prints fractions with the shortest digits that read back, as Go does', async () => {
    const a = await lua(
      `return { status = "Healthy", message = tostring(2 / 3) .. " " .. tostring(obj.spec.f) .. " " .. tostring(0.1 + 0.2) }`,
    );
    expect(a.assess({ ...thing, spec: { f: 0.25 } })?.message).toBe(
      '0.6666666666666666 0.25 0.30000000000000004',
    );
    a.close();
  });

  it('offers the Lua 5.1 globals: unpack, table.getn, loadstring, math.pow', async () => {
    const a = await lua(`
      local a, b = unpack({ "x", "y" })
      local f = loadstring("return 40 + 2")
      return { status = "Healthy", message = a .. b .. table.getn({ 1, 2, 3 }) .. f() .. math.pow(2, 3) }`);
    expect(a.assess(thing)?.message).toBe('xy3428');
    a.close();
  });

  it('turns JSON nulls into absent fields and keeps empty lists and maps as empty tables', async () => {
    const a = await lua(`
      local s = obj.status
      return { status = "Healthy", message = tostring(s.gone == nil) .. " " .. #s.list .. " " .. tostring(next(s.map) == nil) .. " " .. #s.nested }`);
    expect(
      a.assess({ ...thing, status: { gone: null, list: [], map: {}, nested: [{ a: 1 }, { b: null }] } })
        ?.message,
    ).toBe('true 0 true 2');
    a.close();
  });

  it('gives each run fresh globals, as a new Lua state per run does in Argo CD', async () => {
    const a = await lua(`count = (count or 0) + 1; return { status = "Healthy", message = tostring(count) }`);
    expect(a.assess(thing)?.message).toBe('1');
    expect(a.assess(thing)?.message).toBe('1');
    a.close();
  });

  it('has no file or process access', async () => {
    const a = await lua(
      `return { status = "Healthy", message = tostring(io) .. tostring(os.execute) .. tostring(dofile) }`,
    );
    expect(a.assess(thing)?.message).toBe('nilnilnil');
    a.close();
  });

  it('matches status field names case-insensitively, as Go unmarshals JSON', async () => {
    const a = await lua(`return { Status = "Suspended", MESSAGE = "paused by user" }`);
    expect(a.assess(thing)).toEqual({ status: 'Suspended', message: 'paused by user' });
    a.close();
  });
});

describe('failing scripts', () => {
  it('a run-time error is Unknown with the error, its file and line', async () => {
    const a = await lua(`local hs = {}\nhs.status = obj.status.phase\nreturn hs`);
    expect(a.assess(thing)).toEqual({
      status: 'Unknown',
      message: "test.example.com/Thing/health.lua:2: attempt to index a nil value (field 'status')",
    });
    a.close();
  });

  it('a syntax error is Unknown with the compiler message', async () => {
    const a = await lua(`return { status = "Healthy" message = "" }`);
    expect(a.assess(thing)).toEqual({
      status: 'Unknown',
      message: "test.example.com/Thing/health.lua:1: '}' expected near 'message'",
    });
    a.close();
  });

  it('a status outside the vocabulary is Unknown, with Argo CD message', async () => {
    const a = await lua(`return { status = "Fine", message = "all good" }`);
    expect(a.assess(thing)).toEqual({ status: 'Unknown', message: 'Lua returned an invalid health status' });
    a.close();
  });

  it('a missing status is an invalid status too', async () => {
    const a = await lua(`return { message = "forgot the status" }`);
    expect(a.assess(thing)).toEqual({ status: 'Unknown', message: 'Lua returned an invalid health status' });
    a.close();
  });

  it('a script that returns no table is Unknown', async () => {
    const a = await lua(`local x = 1`);
    expect(a.assess(thing)).toEqual({
      status: 'Unknown',
      message: 'expect table output from Lua script, not nil',
    });
    const b = await lua(`return "Healthy"`);
    expect(b.assess(thing)).toEqual({
      status: 'Unknown',
      message: 'expect table output from Lua script, not string',
    });
    a.close();
    b.close();
  });

  it('an empty table or a message of the wrong type fails as JSON decoding does in Argo CD', async () => {
    const a = await lua(`return {}`);
    expect(a.assess(thing)).toEqual({
      status: 'Unknown',
      message: 'json: cannot unmarshal array into Go value of type health.HealthStatus',
    });
    const b = await lua(`return { status = "Healthy", message = 3 }`);
    expect(b.assess(thing)).toEqual({
      status: 'Unknown',
      message: 'json: cannot unmarshal number into Go struct field HealthStatus.message of type string',
    });
    a.close();
    b.close();
  });

  it('a script that never ends is stopped and reported Unknown', async () => {
    const a = await lua(`while true do end`);
    expect(a.assess(thing)).toEqual({ status: 'Unknown', message: 'script did not finish within 1000 ms' });
    // The VM stays usable for the next object.
    a.close();
  });
});

describe('string.format as in gopher-lua', () => {
  it('formats a fractional number with %d by truncating it, and keeps %% literal', async () => {
    const a = await lua(
      `return { status = "Healthy", message = string.format("%d%% of %d done, %s %5.1f", 7 / 2, 10, "ok", 2.25) }`,
    );
    expect(a.assess(thing)?.message).toBe('3% of 10 done, ok   2.2');
    a.close();
  });
});
