// Helm provenance (`.prov`) of a chart package, verified by Helm itself against a repository's keyring.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { dearmorKeyring } from '../helm/armored-keyring.js';
import type { HelmRunOptions } from './render-application.js';
import { runTool, ToolError } from './tool-process.js';

/** Per chart repository: check nothing, check a chart that has a `.prov`, or refuse one without. */
export type ChartVerifyMode = 'none' | 'when-present' | 'required';

export interface ChartProvenanceInput {
  mode: ChartVerifyMode;
  /** The package's file name as served (`web-1.2.0.tgz`): the `.prov` names the file it signs. */
  packageName: string;
  packageBytes: Uint8Array;
  /** The `.prov` served beside the package; null when the repository has none. */
  provenance: string | null;
  /** ASCII-armored public keys allowed to sign this repository's charts. */
  keyring: string;
  helm: HelmRunOptions;
}

export type ChartProvenanceVerdict =
  | { verified: true; signer: string }
  /** Not checked: mode `none`, or `when-present` and no `.prov`. */
  | { verified: null; reason: string }
  | { verified: false; reason: string };

/**
 * Runs `helm verify` on the package with its `.prov` beside it and the keyring in the binary format
 * Helm reads, in a private temp dir removed afterwards; Helm's environment is only what is given
 * here (no GNUPGHOME, no user keyring). Helm's own message is the reason of a refusal.
 */
export async function verifyChartProvenance(input: ChartProvenanceInput): Promise<ChartProvenanceVerdict> {
  if (input.mode === 'none') return { verified: null, reason: 'provenance is not checked (verify: none)' };
  if (input.provenance === null) {
    return input.mode === 'required'
      ? { verified: false, reason: `${input.packageName} has no provenance file (verify: required)` }
      : { verified: null, reason: `${input.packageName} has no provenance file` };
  }
  const work = await mkdtemp(join(tmpdir(), 'flotilla-prov-'));
  try {
    const name = basename(input.packageName);
    await writeFile(join(work, name), input.packageBytes, { mode: 0o600 });
    await writeFile(join(work, `${name}.prov`), input.provenance, { mode: 0o600 });
    await writeFile(join(work, 'keyring.gpg'), dearmorKeyring(input.keyring), { mode: 0o600 });
    const out = await runTool({
      tool: 'helm',
      command: input.helm.binary,
      args: ['verify', name, '--keyring', 'keyring.gpg'],
      cwd: work,
      env: {
        PATH: process.env['PATH'] ?? '/usr/bin:/bin',
        HOME: work,
        HELM_CACHE_HOME: join(work, 'cache'),
        HELM_CONFIG_HOME: join(work, 'config'),
        HELM_DATA_HOME: join(work, 'data'),
        HELM_NO_PLUGINS: '1',
        LC_ALL: 'C',
      },
      timeoutMs: input.helm.timeoutMs,
      maxOutputBytes: 64 * 1024,
    });
    return { verified: true, signer: /^Signed by: (.*)$/m.exec(out)?.[1]?.trim() ?? 'unknown signer' };
  } catch (e) {
    if (!(e instanceof ToolError)) throw e;
    const said = (e.stderr || e.message).replace(/^Error: /, '').trim();
    return { verified: false, reason: `${input.packageName}: ${said.replaceAll(`${work}/`, '')}` };
  } finally {
    await rm(work, { recursive: true, force: true });
  }
}
