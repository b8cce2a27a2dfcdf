import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/** The built program (`npx tsc -b apps/cli/tsconfig.app.json`), as a person runs it. */
const CLI_MAIN = join(import.meta.dirname, '../dist/main.js');

function flotilla(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI_MAIN, ...args], (err, stdout, stderr) =>
      resolve({ code: err ? Number(err.code ?? 1) : 0, out: stdout, err: stderr }),
    );
  });
}

describe('the flotilla program', () => {
  it('prints its version', async () => {
    const { version } = JSON.parse(readFileSync(join(import.meta.dirname, '../package.json'), 'utf8')) as {
      version: string;
    };
    expect(await flotilla('--version')).toEqual({ code: 0, out: `${version}\n`, err: '' });
  });

  it('lists the commands on --help (exit 0) and without a command (exit 2)', async () => {
    const help = await flotilla('--help');
    expect(help.code).toBe(0);
    expect(help.out).toMatch(/^Usage: flotilla <command> \[options\]/);
    expect(help.out).toMatch(/^ {2}completion +print the shell completion script/m);
    expect(help.out).not.toContain('__complete');
    const bare = await flotilla();
    expect(bare.code).toBe(2);
    expect(bare.out).toBe(help.out);
  });

  it('refuses an unknown command on one line with the nearest name (exit 2)', async () => {
    expect(await flotilla('clusterz')).toEqual({
      code: 2,
      out: '',
      err: "flotilla: unknown command 'clusterz' (Did you mean clusters?)\n",
    });
  });

  it("gives a command's help for help COMMAND, as COMMAND --help does", async () => {
    const viaHelp = await flotilla('help', 'targets');
    expect(viaHelp.code).toBe(0);
    expect(viaHelp.out).toMatch(/^usage: flotilla targets/);
    expect(viaHelp).toEqual(await flotilla('targets', '--help'));
  });

  it("hands the command its own options, even the program's names (--version, -h)", async () => {
    const r = await flotilla('health', '--version');
    expect(r).toEqual({ code: 2, out: '', err: "flotilla: unknown option '--version'\n" });
  });
});
