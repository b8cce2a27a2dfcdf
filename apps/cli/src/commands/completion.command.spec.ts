import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { COMMANDS } from '../commands.js';
import { runInProcess } from '../testing/run-in-process.js';
import { candidates, run } from './completion.command.js';

const exec = promisify(execFile);
/** The built CLI (`npx tsc -b apps/cli/tsconfig.app.json`), as the completion scripts call it. */
const CLI_MAIN = join(import.meta.dirname, '../../dist/main.js');

describe('flotilla __complete', () => {
  it('offers the commands, without the hidden helper', async () => {
    const commands = await candidates(COMMANDS, []);
    expect(commands).toEqual(
      Object.keys(COMMANDS)
        .filter((c) => c !== '__complete')
        .sort(),
    );
  });

  it("offers a command's sub-commands and options, sub-commands only before other arguments", async () => {
    const first = await candidates(COMMANDS, ['clusters']);
    expect(first.slice(0, 5)).toEqual(['list', 'get', 'add', 'token', 'revoke']);
    expect(first).toEqual(expect.arrayContaining(['--label', '--hub', '--output', '--help']));
    const later = await candidates(COMMANDS, ['clusters', 'add', 'eu1']);
    expect(later).not.toContain('add');
    expect(later).toContain('--label');
  });

  it('offers nothing after an option that takes a value (the shell completes a file name)', async () => {
    expect(await candidates(COMMANDS, ['health', '-f'])).toEqual([]);
    expect(await candidates(COMMANDS, ['targets', '--cluster'])).toEqual([]);
    // A boolean option takes no value: options again.
    expect(await candidates(COMMANDS, ['sync', '--dry-run'])).toContain('--reason');
  });

  it('leaves out old spellings', async () => {
    const history = await candidates(COMMANDS, ['history']);
    expect(history).toContain('--appset');
    expect(history).not.toContain('--app-set');
  });

  it('offers nothing for an unknown command', async () => {
    expect(await candidates(COMMANDS, ['nope'])).toEqual([]);
  });
});

describe('flotilla completion', () => {
  it.each([
    [['fish', 'extra'], "unexpected argument 'extra'"],
    [['tcsh'], "unknown shell 'tcsh': expected bash, zsh or fish"],
    [[], 'missing SHELL'],
  ])('%j is a usage error (exit 2)', async (argv, message) => {
    const r = await runInProcess(run, argv);
    expect(r.code).toBe(2);
    expect(r.err).toContain(`flotilla completion: ${message}`);
  });

  it('prints a zsh script that registers itself, and a fish one', async () => {
    expect((await runInProcess(run, ['zsh'])).out).toMatch(
      /^#compdef flotilla\n[\s\S]*compdef _flotilla flotilla/,
    );
    expect((await runInProcess(run, ['fish'])).out).toContain(
      "complete -c flotilla -f -a '(flotilla __complete",
    );
  });

  describe('in bash, with the built CLI', () => {
    const bin = mkdtempSync(join(tmpdir(), 'flotilla-completion-'));
    writeFileSync(join(bin, 'flotilla'), `#!/bin/sh\nexec "${process.execPath}" "${CLI_MAIN}" "$@"\n`);
    chmodSync(join(bin, 'flotilla'), 0o755);
    afterAll(() => rmSync(bin, { recursive: true, force: true }));

    /** What bash offers at `flotilla WORD… CURRENT<Tab>`, through the sourced script. */
    const complete = async (...words: string[]): Promise<string[]> => {
      const script = [
        'source <(flotilla completion bash)',
        `COMP_WORDS=(flotilla ${words.map((w) => `'${w}'`).join(' ')})`,
        'COMP_CWORD=$((${#COMP_WORDS[@]} - 1))',
        '_flotilla',
        'printf "%s\\n" "${COMPREPLY[@]}"',
      ].join('\n');
      const { stdout } = await exec('bash', ['-c', script], {
        env: { ...process.env, PATH: `${bin}:${process.env['PATH'] ?? ''}` },
      });
      return stdout.split('\n').filter(Boolean);
    };

    it('completes command names, sub-commands and options', async () => {
      expect(await complete('clu')).toEqual(['clusters']);
      expect(await complete('rollouts', 'st')).toEqual(['status']);
      expect(await complete('history', '--app')).toEqual(['--appset']);
      expect(await complete('targets', '--cluster', '')).toEqual([]);
    }, 30_000);
  });
});
