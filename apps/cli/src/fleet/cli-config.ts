import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseDocument, stringify } from 'yaml';
import { z } from 'zod';
import { UsageError } from '../offline/offline-command.js';

/**
 * The CLI's own settings: named contexts, each a hub URL and optionally a token, and which one is
 * current — `kubectl`'s kubeconfig habit for hubs. Kept at `$FLOTILLA_CONFIG`, else
 * `$XDG_CONFIG_HOME/flotilla/config.yaml`, else `~/.config/flotilla/config.yaml`, written 0600
 * because it may hold tokens. Flags and environment variables always win over the file.
 */

const contextName = z
  .string()
  .regex(/^[a-z0-9]([-a-z0-9_.]{0,61}[a-z0-9])?$/, 'lower-case letters, digits, "-", "_" and "."');

const hubUrl = z.url({ protocol: /^https?$/, error: 'an http(s) URL such as https://flotilla.example.com' });

export const cliContextSchema = z.strictObject({
  name: contextName,
  hub: hubUrl,
  token: z.string().min(1).optional(),
});
export type CliContext = z.infer<typeof cliContextSchema>;

export const cliConfigSchema = z.strictObject({
  apiVersion: z.literal('flotilla.dev/v1alpha1'),
  kind: z.literal('CliConfig'),
  currentContext: z.string().optional(),
  contexts: z.array(cliContextSchema).default([]),
});
export type CliConfig = z.infer<typeof cliConfigSchema>;

export const contextNameSchema = contextName;
export const hubUrlSchema = hubUrl;

export function cliConfigPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env['FLOTILLA_CONFIG']) return env['FLOTILLA_CONFIG'];
  const base = env['XDG_CONFIG_HOME'] || join(homedir(), '.config');
  return join(base, 'flotilla', 'config.yaml');
}

const empty = (): CliConfig => ({ apiVersion: 'flotilla.dev/v1alpha1', kind: 'CliConfig', contexts: [] });

/** The file's settings (none when it does not exist); a broken file is a usage error naming it. */
export function loadCliConfig(path = cliConfigPath()): CliConfig {
  if (!existsSync(path)) return empty();
  const doc = parseDocument(readFileSync(path, 'utf8'));
  if (doc.errors.length > 0) throw new UsageError(`${path}: ${doc.errors[0]!.message}`);
  const parsed = cliConfigSchema.safeParse(doc.toJS() ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    const at = issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('');
    throw new UsageError(`${path}: ${at.replace(/^\./, '') || '(top)'}: ${issue.message}`);
  }
  const names = parsed.data.contexts.map((c) => c.name);
  const twice = names.find((n, i) => names.indexOf(n) !== i);
  if (twice) throw new UsageError(`${path}: context ${twice} is defined twice`);
  return parsed.data;
}

/** Writes the whole file at once (a temporary file renamed over it), readable by its owner only. */
export function saveCliConfig(config: CliConfig, path = cliConfigPath()): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const part = `${path}.${process.pid}.part`;
  writeFileSync(part, stringify(cliConfigSchema.parse(config)), { mode: 0o600 });
  chmodSync(part, 0o600);
  renameSync(part, path);
}

/** Adds or replaces a context by name. */
export function withContext(config: CliConfig, context: CliContext): CliConfig {
  const others = config.contexts.filter((c) => c.name !== context.name);
  return { ...config, contexts: [...others, context].sort((a, b) => a.name.localeCompare(b.name)) };
}

/**
 * The context a command talks to: `--context`, else $FLOTILLA_CONTEXT, else the current one; none
 * when nothing names one. A name that is not in the file is a usage error listing the known ones.
 */
export function selectContext(
  config: CliConfig,
  wanted: string | undefined,
  path: string,
): CliContext | undefined {
  const name = wanted ?? config.currentContext;
  if (!name) return undefined;
  const found = config.contexts.find((c) => c.name === name);
  if (!found) {
    const known = config.contexts.map((c) => c.name).join(', ') || 'none';
    throw new UsageError(`no context '${name}' in ${path} (known: ${known}); see 'flotilla context list'`);
  }
  return found;
}
