/**
 * `FLOTILLA_BENCH_CPU_PROFILE=DIR` writes a V8 CPU profile of every bench process and hub into DIR
 * (open them in Chrome DevTools): to see where a missed target's time goes.
 */
export function cpuProfileArgs(): string[] {
  const dir = process.env['FLOTILLA_BENCH_CPU_PROFILE'];
  return dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`] : [];
}
