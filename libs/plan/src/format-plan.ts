import { type AppSetPlan, type GuardReport, type PlanReport, type TargetPlan } from './plan-report.js';

/** GitHub refuses a comment over 65,536 characters; GitLab's notes allow more. Stay under both. */
export const MAX_MARKDOWN_CHARS = 60_000;

const MARK = { added: '+', removed: '-', changed: '~' } as const;

function short(revision: string | null): string {
  return revision === null ? '(directory)' : revision.slice(0, 12);
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** One line saying what the plan finds, the first thing a reviewer reads. */
export function planHeadline(r: PlanReport): string {
  const s = r.summary;
  if (!r.changed) return 'No changes: the fleet stays as it is.';
  const parts = [
    `${plural(s.targets.added, 'target')} added`,
    `${s.targets.changed} changed`,
    `${s.targets.removed} removed`,
    `${plural(s.objectsChanged, 'object')} changed`,
  ];
  if (s.fleetObjectsChanged > 0) parts.push(`${plural(s.fleetObjectsChanged, 'fleet object')} changed`);
  const warnings: string[] = [];
  if (s.guardHolds > 0) warnings.push(`the deletion guard would hold ${plural(s.guardHolds, 'change')}`);
  if (s.heldByWindows > 0) warnings.push(`${plural(s.heldByWindows, 'target')} held by sync windows`);
  if (s.policyDenials > 0) warnings.push(`${plural(s.policyDenials, 'policy denial')}`);
  if (s.projectViolations > 0)
    warnings.push(`${plural(s.projectViolations, 'project violation')} (the hub refuses those appsets)`);
  return `${parts.join(', ')}${warnings.length > 0 ? `; ${warnings.join('; ')}` : ''}.`;
}

function guardText(g: GuardReport): string {
  const what = `${g.deleting} of ${g.current} deleted (${g.deletePercent}%, limit ${g.limit}%)`;
  return g.wouldHold ? `HOLD: ${what}` : what;
}

function windowsText(t: TargetPlan): string {
  if (t.windows.canSync) return t.windows.matching.length === 0 ? '-' : 'open';
  const by = t.windows.active.length > 0 ? t.windows.active.join(',') : t.windows.matching.join(',');
  return `held by ${by} until ${t.windows.heldUntil ?? 'beyond a year'}`;
}

function objectsText(t: TargetPlan): string {
  return t.objects
    .map((o) => `${MARK[o.change]}${o.kind} ${o.namespace === null ? '' : `${o.namespace}/`}${o.name}`)
    .join(' ');
}

function columns(rows: string[][]): string[] {
  const widths = rows[0]?.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length))) ?? [];
  return rows.map((r) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd(),
  );
}

/** The human table (the default output): per appset, a row per target that changes. */
export function formatPlanTable(r: PlanReport, options: { diffs?: boolean } = {}): string {
  const lines = [`plan ${short(r.base.revision)} -> ${short(r.head.revision)} (windows at ${r.at})`];
  if (r.fleet.objects.length > 0) {
    lines.push('', 'fleet objects:');
    for (const o of r.fleet.objects) lines.push(`  ${MARK[o.change]} ${o.kind}/${o.name} (${o.file})`);
  }
  const fg = r.fleet.deletionGuard;
  if (fg.objects.wouldHold || fg.targets.wouldHold)
    lines.push(
      '',
      `fleet deletion guard: objects ${guardText(fg.objects)}; targets of deleted appsets ${guardText(fg.targets)}`,
    );
  for (const a of r.appSets) {
    if (a.change === 'unchanged') continue;
    lines.push('', appSetLine(a));
    if (a.targets.length === 0) continue;
    const rows = [['', 'CLUSTER', 'TARGET', 'STEP', 'WINDOWS', 'OBJECTS']];
    for (const t of a.targets)
      rows.push([
        MARK[t.change],
        t.cluster ?? '?',
        t.name,
        t.step?.name ?? '-',
        t.change === 'removed' ? '-' : windowsText(t),
        objectsText(t),
      ]);
    lines.push(...columns(rows).map((l) => `  ${l}`));
    if (options.diffs)
      for (const t of a.targets) for (const o of t.objects) lines.push(...o.diff.trimEnd().split('\n'));
  }
  if (r.projects.violations.length > 0) {
    lines.push('', 'projects:');
    for (const v of r.projects.violations)
      lines.push(`  REFUSED  ${v.appSet}${v.target === null ? '' : `/${v.target}`}: ${v.message}`);
  }
  if (r.policies.violations.length > 0) {
    lines.push('', 'policies:');
    for (const v of r.policies.violations)
      lines.push(
        `  ${v.action.toUpperCase()}  ${v.appSet}/${v.target}: ${v.object.kind} ${v.object.namespace === null ? '' : `${v.object.namespace}/`}${v.object.name}: ${v.policy} [${v.binding}]: ${v.message}`,
      );
  }
  lines.push('', planHeadline(r));
  return `${lines.join('\n')}\n`;
}

function appSetLine(a: AppSetPlan): string {
  const parts = [`appset ${a.name}: ${a.change}`, `project ${a.project}`];
  if (a.rollout) parts.push(`rollout ${a.rollout.strategy ?? 'inline'} (${a.rollout.steps.join(' > ')})`);
  parts.push(`deletion guard ${guardText(a.deletionGuard)}`);
  if (a.unchangedTargets > 0) parts.push(`${a.unchangedTargets} unchanged`);
  return parts.join(', ');
}

function cell(text: string): string {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

/** A fence longer than any run of backticks in the text, so a diff never closes its own block. */
function fenced(lang: string, text: string): string {
  const longest = Math.max(2, ...[...text.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(longest + 1);
  return `${fence}${lang}\n${text.trimEnd()}\n${fence}`;
}

/**
 * A pull-request comment: the summary and one row per appset first, the details (targets, steps,
 * windows, diffs) folded in <details>. The same diff on many clusters is shown once, naming them.
 * Cut at MAX_MARKDOWN_CHARS with a line saying so.
 */
export function formatPlanMarkdown(r: PlanReport): string {
  const head: string[] = [
    `### Flotilla plan: \`${short(r.base.revision)}\` → \`${short(r.head.revision)}\``,
    '',
    `**${planHeadline(r)}**`,
  ];
  const changedSets = r.appSets.filter((a) => a.change !== 'unchanged');
  if (changedSets.length > 0) {
    head.push(
      '',
      '| ApplicationSet | Change | Added | Changed | Removed | Deletion guard | Held by windows |',
      '|---|---|---|---|---|---|---|',
    );
    for (const a of changedSets) {
      const n = (c: TargetPlan['change']) => a.targets.filter((t) => t.change === c).length;
      const held = a.targets.filter((t) => t.change !== 'removed' && !t.windows.canSync).length;
      head.push(
        `| ${cell(a.name)} | ${a.change} | ${n('added')} | ${n('changed')} | ${n('removed')} | ${a.deletionGuard.wouldHold ? `⚠️ would hold (${a.deletionGuard.deletePercent}% > ${a.deletionGuard.limit}%)` : 'ok'} | ${held} |`,
      );
    }
  }
  const fg = r.fleet.deletionGuard;
  if (fg.objects.wouldHold || fg.targets.wouldHold)
    head.push(
      '',
      `⚠️ The fleet source's deletion guard would hold this commit: objects ${guardText(fg.objects)}; targets of deleted appsets ${guardText(fg.targets)}.`,
    );
  const denials = r.policies.violations.filter((v) => v.action === 'Deny');
  if (denials.length > 0) {
    head.push('', `❌ **Policies deny ${plural(denials.length, 'object')}:**`, '');
    for (const v of denials.slice(0, 20))
      head.push(
        `- \`${cell(v.appSet)}/${cell(v.target)}\` ${v.object.kind} ${v.object.namespace === null ? '' : `${v.object.namespace}/`}${v.object.name}: ${cell(v.policy)}: ${cell(v.message)}`,
      );
    if (denials.length > 20) head.push(`- … and ${denials.length - 20} more`);
  }

  if (r.projects.violations.length > 0) {
    head.push(
      '',
      `❌ **Projects refuse ${plural(r.projects.violations.length, 'thing')}** (the hub refuses those appsets' expansion):`,
      '',
    );
    for (const v of r.projects.violations.slice(0, 20))
      head.push(
        `- \`${cell(v.appSet)}${v.target === null ? '' : `/${cell(v.target)}`}\`: ${cell(v.message)}`,
      );
    if (r.projects.violations.length > 20) head.push(`- … and ${r.projects.violations.length - 20} more`);
  }

  const details: string[] = [];
  if (r.fleet.objects.length > 0) {
    details.push(
      '',
      `<details><summary>Fleet objects: ${plural(r.fleet.objects.length, 'change')}</summary>`,
      '',
    );
    for (const o of r.fleet.objects)
      details.push(
        `**${MARK[o.change]} ${o.kind}/${o.name}** (\`${o.file}\`)`,
        '',
        fenced('diff', o.diff),
        '',
      );
    details.push('</details>');
  }
  for (const a of changedSets) {
    if (a.targets.length === 0) continue;
    details.push('', `<details><summary>${a.name}: ${plural(a.targets.length, 'target')}</summary>`, '');
    if (a.rollout)
      details.push(`Rollout ${a.rollout.strategy ?? '(inline)'}: ${a.rollout.steps.join(' → ')}`, '');
    details.push('| Cluster | Target | Change | Step | Windows | Objects |', '|---|---|---|---|---|---|');
    for (const t of a.targets)
      details.push(
        `| ${cell(t.cluster ?? '?')} | ${cell(t.name)} | ${t.change} | ${cell(t.step?.name ?? '-')} | ${cell(t.change === 'removed' ? '-' : windowsText(t))} | ${cell(objectsText(t))} |`,
      );
    // The same diff on many clusters (an image bump everywhere) reads once, with the targets named.
    const byDiff = new Map<string, string[]>();
    for (const t of a.targets)
      for (const o of t.objects) {
        const key = o.diff.split('\n').slice(3).join('\n');
        const list = byDiff.get(key);
        if (list) list.push(t.name);
        else byDiff.set(key, [t.name]);
      }
    for (const [diff, names] of byDiff) {
      const first = a.targets
        .find((t) => t.name === names[0])
        ?.objects.find((o) => o.diff.split('\n').slice(3).join('\n') === diff);
      const header = first?.diff.split('\n')[1]?.replace(/^--- base\//, '') ?? '';
      const on =
        names.length > 3 ? `${names.slice(0, 3).join(', ')} and ${names.length - 3} more` : names.join(', ');
      details.push('', `\`${header}\` on ${on}:`, '', fenced('diff', first?.diff ?? diff));
    }
    details.push('', '</details>');
  }

  // Cut between entries (a fenced diff is one entry), so no block is left open.
  let text = `${head.join('\n')}\n`;
  let open = 0;
  for (const entry of details) {
    if (text.length + entry.length + 200 > MAX_MARKDOWN_CHARS) {
      text += `${'\n</details>'.repeat(open)}\n\n_The plan is longer than a comment allows; run \`flotilla plan -o json\` for all of it._\n`;
      return text;
    }
    if (entry.startsWith('<details>')) open++;
    if (entry === '</details>') open--;
    text += `${entry}\n`;
  }
  return text;
}
