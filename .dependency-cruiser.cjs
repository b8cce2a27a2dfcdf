// `npm run lint` runs this: the hub's folders form one pipeline, and no file imports a later stage.
// The order below is docs/architecture.md's; a folder may import any folder listed before it, never
// one after it. Specs and the test helpers (testing/) may drive the whole hub, so they are left out.
const HUB_STAGES = [
  // foundation: cross-cutting, imports no feature
  'config',
  'generated',
  'db',
  'common',
  'console',
  'auth',
  'metrics',
  'audit',
  'queues',
  'wakeups',
  'probes',
  'api-tokens',
  'break-glass',
  'ownership',
  // the data's way
  'projects',
  'sources',
  'render',
  'desired-state',
  'release',
  'operations',
  'clusters',
  'health-rules',
  'agent-gateway',
  'history',
  'fleet-view',
  'notifications',
  'fleet-repo',
  'plan',
  'pipeline',
];

const hub = 'apps/hub/src';
const notTests = '\\.spec\\.ts$|/testing/|/testdata/';

const stageRules = HUB_STAGES.slice(0, -1).map((stage, i) => ({
  name: `hub-stage-${stage}`,
  comment: `${hub}/${stage} stands before ${HUB_STAGES.slice(i + 1).join(', ')} and may not import them`,
  severity: 'error',
  from: { path: `^${hub}/${stage}/`, pathNot: notTests },
  to: { path: `^${hub}/(${HUB_STAGES.slice(i + 1).join('|')})/` },
}));

module.exports = {
  forbidden: [
    {
      name: 'no-import-cycle',
      comment:
        'files that import each other in a loop: one of them holds what both need, or a third file does',
      severity: 'error',
      from: { path: '^(apps|libs)/[^/]+/src/', pathNot: notTests },
      to: { circular: true },
    },
    {
      name: 'hub-stage-unknown',
      comment: `every folder of ${hub} is a stage listed in .dependency-cruiser.cjs (and docs/architecture.md)`,
      severity: 'error',
      from: { path: `^${hub}/[^/]+/`, pathNot: `^${hub}/(${HUB_STAGES.join('|')}|testing|testdata)/` },
      to: {},
    },
    ...stageRules,
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '(^|/)(node_modules|dist|out-tsc)/|/generated/' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.base.json' },
  },
};
