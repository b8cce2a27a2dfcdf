/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-return --
   kubectl's JSON output is read as untyped documents and checked field by field. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimCluster, type SimClusterHandle } from './cluster.js';
import { Kubectl } from './testing/kubectl.js';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const testdata = (name: string): string => join(import.meta.dirname, 'testdata', name);

describe('real kubectl against a simulated cluster', () => {
  let cluster: SimClusterHandle;
  let k: Kubectl;

  beforeAll(async () => {
    cluster = await startSimCluster({ name: 'kubectl-conformance', freezeObjects: true });
    k = new Kubectl(cluster.kubeconfig());
  });

  afterAll(async () => {
    await cluster.stop();
    k.cleanup();
  });

  it('serves version 1.32 and discovery with short names and subresources', async () => {
    const version = await k.json(['version']);
    expect(version['serverVersion']).toMatchObject({ major: '1', minor: '32', gitVersion: 'v1.32.0' });
    const resources = await k.ok(['api-resources', '--no-headers']);
    expect(resources).toMatch(/^deployments\s+deploy\s+apps\/v1\s+true\s+Deployment$/m);
    expect(resources).toMatch(/^namespaces\s+ns\s+v1\s+false\s+Namespace$/m);
    expect(resources).toMatch(/^customresourcedefinitions\s+crd,crds\s+apiextensions.k8s.io\/v1\s+false/m);
    expect(await k.ok(['auth', 'can-i', 'create', 'deployments'])).toBe('yes\n');
  });

  it('applies server-side with server defaults, canonical quantities and a kubectl Apply entry', async () => {
    expect(await k.ok(['apply', '--server-side', '-f', testdata('web-deployment.yaml')])).toBe(
      'deployment.apps/web serverside-applied\n',
    );
    const d = await k.json(['get', 'deploy', 'web', '--show-managed-fields']);
    expect(d['metadata']['generation']).toBe(1);
    expect(d['metadata']['uid']).toMatch(/^[0-9a-f-]{36}$/);
    expect(d['metadata']['creationTimestamp']).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    expect(d['spec']['strategy']).toEqual({
      type: 'RollingUpdate',
      rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' },
    });
    expect(d['spec']['revisionHistoryLimit']).toBe(10);
    expect(d['spec']['progressDeadlineSeconds']).toBe(600);
    expect(d['spec']['template']['metadata']).toEqual({ creationTimestamp: null, labels: { app: 'web' } });
    const pod = d['spec']['template']['spec'];
    expect(pod).toMatchObject({
      dnsPolicy: 'ClusterFirst',
      restartPolicy: 'Always',
      schedulerName: 'default-scheduler',
      securityContext: {},
      terminationGracePeriodSeconds: 30,
    });
    expect(pod['containers'][0]).toEqual({
      name: 'nginx',
      image: 'nginx:1.27',
      imagePullPolicy: 'IfNotPresent',
      ports: [{ containerPort: 80, protocol: 'TCP' }],
      resources: { limits: { cpu: '1', memory: '1Gi' }, requests: { cpu: '500m', memory: '1536Mi' } },
      terminationMessagePath: '/dev/termination-log',
      terminationMessagePolicy: 'File',
    });
    const apply = d['metadata']['managedFields'][0];
    expect(apply).toMatchObject({
      manager: 'kubectl',
      operation: 'Apply',
      apiVersion: 'apps/v1',
      fieldsType: 'FieldsV1',
    });
    expect(apply['fieldsV1']).toEqual({
      'f:metadata': { 'f:labels': { 'f:app': {} } },
      'f:spec': {
        'f:replicas': {},
        'f:selector': {},
        'f:template': {
          'f:metadata': { 'f:labels': { 'f:app': {} } },
          'f:spec': {
            'f:containers': {
              'k:{"name":"nginx"}': {
                '.': {},
                'f:image': {},
                'f:name': {},
                'f:ports': { 'k:{"containerPort":80,"protocol":"TCP"}': { '.': {}, 'f:containerPort': {} } },
                'f:resources': {
                  'f:limits': { 'f:cpu': {}, 'f:memory': {} },
                  'f:requests': { 'f:cpu': {}, 'f:memory': {} },
                },
              },
            },
          },
        },
      },
    });
    const plain = await k.ok(['get', 'deploy', 'web', '-o', 'yaml']);
    expect(plain).not.toContain('managedFields');
  });

  it('rolls out: rollout status, wait --for=condition, revision annotation via /status', async () => {
    expect(await k.ok(['rollout', 'status', 'deploy/web', '--timeout=20s'])).toContain(
      'deployment "web" successfully rolled out',
    );
    expect(await k.ok(['wait', '--for=condition=Available', 'deploy/web', '--timeout=10s'])).toBe(
      'deployment.apps/web condition met\n',
    );
    const d = await k.json(['get', 'deploy', 'web', '--show-managed-fields']);
    expect(d['metadata']['generation']).toBe(1);
    expect(d['metadata']['annotations']).toEqual({ 'deployment.kubernetes.io/revision': '1' });
    expect(d['status']).toMatchObject({
      observedGeneration: 1,
      replicas: 2,
      updatedReplicas: 2,
      readyReplicas: 2,
      availableReplicas: 2,
    });
    const progressing = d['status']['conditions'].find((c: Obj) => c['type'] === 'Progressing');
    expect(progressing).toMatchObject({ status: 'True', reason: 'NewReplicaSetAvailable' });
    expect(progressing['message']).toMatch(/^ReplicaSet "web-[a-z0-9]+" has successfully progressed\.$/);
    const status = d['metadata']['managedFields'].find((m: Obj) => m['subresource'] === 'status');
    expect(status).toMatchObject({
      manager: 'kube-controller-manager',
      operation: 'Update',
      apiVersion: 'apps/v1',
    });
    expect(status['fieldsV1']['f:metadata']).toEqual({
      'f:annotations': { '.': {}, 'f:deployment.kubernetes.io/revision': {} },
    });
    const rs = await k.json<Obj>(['get', 'rs', '-l', 'app=web']);
    expect(rs['items']).toHaveLength(1);
    expect(rs['items'][0]['metadata']['ownerReferences'][0]).toMatchObject({
      kind: 'Deployment',
      name: 'web',
      controller: true,
      blockOwnerDeletion: true,
    });
    // Table output: the columns a real cluster prints.
    expect(await k.ok(['get', 'deploy', 'web'])).toMatch(
      /^NAME\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+AGE\nweb\s+2\/2\s+2\s+2\s+\d+s\n$/,
    );
    expect(await k.ok(['get', 'pods', '-l', 'app=web', '--no-headers'])).toMatch(
      /^web-[a-z0-9]+-[a-z0-9]{5}\s+1\/1\s+Running\s+0\s+\d+s\n/,
    );
    expect(await k.ok(['logs', 'deploy/web'])).toMatch(
      /^kube-sim: container nginx of pod web-[a-z0-9-]+ started \(image nginx:1\.27\)\n$/,
    );
    const pods = await k.json<Obj>(['get', 'pods', '-l', 'app=web']);
    expect(pods['items'].map((p: Obj) => p['status']['phase'])).toEqual(['Running', 'Running']);
  });

  it('re-applying the same manifest is a no-op, and --dry-run=server changes nothing', async () => {
    const before = await k.json(['get', 'deploy', 'web']);
    await k.ok(['apply', '--server-side', '-f', testdata('web-deployment.yaml')]);
    await k.ok(['apply', '--server-side', '--dry-run=server', '-f', testdata('web-deployment.yaml')]);
    const after = await k.json(['get', 'deploy', 'web']);
    expect(after['metadata']['resourceVersion']).toBe(before['metadata']['resourceVersion']);
    const diff = await k.run(['diff', '--server-side', '-f', testdata('web-deployment.yaml')]);
    expect(diff.code).toBe(0);
  });

  it('scale records a scale-subresource manager that later conflicts with apply until forced', async () => {
    await k.ok(['scale', 'deploy/web', '--replicas=3']);
    const d = await k.json(['get', 'deploy', 'web', '--show-managed-fields']);
    expect(d['spec']['replicas']).toBe(3);
    expect(d['metadata']['generation']).toBe(2);
    const scale = d['metadata']['managedFields'].find((m: Obj) => m['subresource'] === 'scale');
    expect(scale).toMatchObject({
      manager: 'kubectl',
      operation: 'Update',
      apiVersion: 'apps/v1',
      fieldsV1: { 'f:spec': { 'f:replicas': {} } },
    });
    const conflict = await k.run(['apply', '--server-side', '-f', testdata('web-deployment.yaml')]);
    expect(conflict.code).toBe(1);
    expect(conflict.stderr).toContain(
      'Apply failed with 1 conflict: conflict with "kubectl" with subresource "scale" using apps/v1: .spec.replicas',
    );
    expect(conflict.stderr).toContain('--force-conflicts');
    await k.ok(['apply', '--server-side', '--force-conflicts', '-f', testdata('web-deployment.yaml')]);
    const forced = await k.json(['get', 'deploy', 'web', '--show-managed-fields']);
    expect(forced['spec']['replicas']).toBe(2);
    expect(
      forced['metadata']['managedFields'].map(
        (m: Obj) => `${m['manager']}/${m['operation']}/${m['subresource'] ?? ''}`,
      ),
    ).toEqual(['kubectl/Apply/', 'kube-controller-manager/Update/status']);
  });

  it('patches with merge, JSON and strategic patches; label and annotate', async () => {
    await k.ok(['patch', 'deploy', 'web', '--type=merge', '-p', '{"metadata":{"labels":{"tier":"front"}}}']);
    await k.ok([
      'patch',
      'deploy',
      'web',
      '--type=json',
      '-p',
      '[{"op":"add","path":"/metadata/labels/team","value":"a"}]',
    ]);
    await k.ok([
      'patch',
      'deploy',
      'web',
      '-p',
      '{"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.28"}]}}}}',
    ]);
    await k.ok(['label', 'deploy', 'web', 'env=dev']);
    const unchanged = await k.ok(['label', 'deploy', 'web', 'env=dev', '--overwrite']);
    expect(unchanged).toBe('deployment.apps/web not labeled\n');
    const before = await k.json(['get', 'deploy', 'web']);
    await k.ok(['annotate', 'deploy', 'web', 'note=hello']);
    const d = await k.json(['get', 'deploy', 'web', '--show-managed-fields']);
    expect(d['metadata']['labels']).toEqual({ app: 'web', tier: 'front', team: 'a', env: 'dev' });
    // An annotation change bumps a Deployment's generation (apps strategy), unlike other kinds.
    expect(d['metadata']['generation']).toBe(before['metadata']['generation'] + 1);
    const containers = d['spec']['template']['spec']['containers'];
    expect(containers).toHaveLength(1);
    expect(containers[0]).toMatchObject({
      name: 'nginx',
      image: 'nginx:1.28',
      ports: [{ containerPort: 80, protocol: 'TCP' }],
    });
    const managers = d['metadata']['managedFields'].map((m: Obj) => m['manager']);
    expect(managers).toEqual(
      expect.arrayContaining(['kubectl', 'kubectl-patch', 'kubectl-label', 'kubectl-annotate']),
    );
    expect(await k.ok(['rollout', 'status', 'deploy/web', '--timeout=20s'])).toContain(
      'successfully rolled out',
    );
    const rollout = await k.json(['get', 'deploy', 'web']);
    expect(rollout['metadata']['annotations']['deployment.kubernetes.io/revision']).toBe('2');
    const rs = await k.json<Obj>(['get', 'rs', '-l', 'app=web']);
    expect(rs['items'].map((r: Obj) => r['spec']['replicas']).sort()).toEqual([0, 2]);
  });

  it('edits through KUBE_EDITOR with the kubectl-edit manager', async () => {
    const editor = k.file('editor.sh', '#!/bin/sh\nsed -i "s/^  replicas: 2$/  replicas: 4/" "$1"\n', 0o755);
    expect(await k.ok(['edit', 'deploy', 'web'], { env: { KUBE_EDITOR: editor } })).toBe(
      'deployment.apps/web edited\n',
    );
    const d = await k.json(['get', 'deploy', 'web', '--show-managed-fields']);
    expect(d['spec']['replicas']).toBe(4);
    const edit = d['metadata']['managedFields'].find((m: Obj) => m['manager'] === 'kubectl-edit');
    expect(edit).toMatchObject({
      operation: 'Update',
      apiVersion: 'apps/v1',
      fieldsV1: { 'f:spec': { 'f:replicas': {} } },
    });
  });

  it('reports errors as Status objects', async () => {
    const missing = await k.run(['get', 'deploy', 'nope']);
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim()).toBe('Error from server (NotFound): deployments.apps "nope" not found');
    const dup = await k.run(['create', '-f', testdata('web-deployment.yaml')]);
    expect(dup.stderr.trim()).toBe(
      'Error from server (AlreadyExists): error when creating "' +
        testdata('web-deployment.yaml') +
        '": deployments.apps "web" already exists',
    );
  });

  it('deletes with foreground cascade: ReplicaSets and Pods go first', async () => {
    await k.ok(['delete', 'deploy', 'web', '--cascade=foreground', '--timeout=20s']);
    expect((await k.json<Obj>(['get', 'deploy']))['items']).toEqual([]);
    expect((await k.json<Obj>(['get', 'rs']))['items']).toEqual([]);
    expect((await k.json<Obj>(['get', 'pods']))['items']).toEqual([]);
  });

  it('serves CRDs at once: wait established, CRUD, status subresource, explain', async () => {
    await k.ok(['apply', '--server-side', '-f', testdata('widget-crd.yaml')]);
    await k.ok(['wait', '--for=condition=Established', 'crd/widgets.example.com', '--timeout=10s']);
    const widget =
      'apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 3, colour: red}\n';
    expect(await k.ok(['apply', '--server-side', '-f', '-'], { input: widget })).toBe(
      'widget.example.com/w1 serverside-applied\n',
    );
    await k.ok(['patch', 'wd', 'w1', '--type=merge', '-p', '{"spec":{"size":4}}']);
    const w = await k.json(['get', 'widgets', 'w1']);
    expect(w).toMatchObject({
      apiVersion: 'example.com/v1',
      kind: 'Widget',
      spec: { size: 4, colour: 'red' },
    });
    expect(w['metadata']['generation']).toBe(2);
    const smp = await k.run(['patch', 'wd', 'w1', '-p', '{"spec":{"size":5}}']);
    expect(smp.code).toBe(1);
    // kubectl refuses strategic merge for custom resources before sending; the server would answer 415.
    expect(smp.stderr).toContain(
      'application/strategic-merge-patch+json is not supported by example.com/v1, Kind=Widget',
    );
    await k.ok([
      'patch',
      'wd',
      'w1',
      '--subresource=status',
      '--type=merge',
      '-p',
      '{"status":{"ready":true}}',
    ]);
    const s = await k.json(['get', 'wd', 'w1']);
    expect(s['status']).toEqual({ ready: true });
    expect(s['metadata']['generation']).toBe(2);
    expect(await k.ok(['explain', 'widget.spec.size'])).toContain('FIELD: size <integer>');
    // Field validation: kubectl sends Strict, so a field the schema does not declare is refused and
    // nothing is written; --validate=false sends Ignore and the server prunes the field.
    const typo =
      'apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {size: 6, colur: blue}\n';
    const strict = await k.run(['apply', '--server-side', '-f', '-'], { input: typo });
    expect(strict.code).toBe(1);
    expect(strict.stderr).toContain('strict decoding error: unknown field "spec.colur"');
    expect((await k.json(['get', 'wd', 'w1']))['spec']).toEqual({ size: 4, colour: 'red' });
    await k.ok(['apply', '--server-side', '--force-conflicts', '--validate=false', '-f', '-'], {
      input: typo,
    });
    expect((await k.json(['get', 'wd', 'w1']))['spec']).toEqual({ size: 6 });
    const warned = await k.run(['apply', '--server-side', '--validate=warn', '-f', '-'], {
      input: typo.replace('size: 6', 'size: 7'),
    });
    expect(warned.code).toBe(0);
    expect(warned.stderr).toContain('Warning: unknown field "spec.colur"');
    expect((await k.json(['get', 'wd', 'w1']))['spec']).toEqual({ size: 7 });
    const list = await k.json<Obj>(['get', 'widgets']);
    expect(list['items'][0]).toMatchObject({ apiVersion: 'example.com/v1', kind: 'Widget' });
    await k.ok(['delete', 'crd', 'widgets.example.com']);
    const gone = await k.run(['get', '--raw', '/apis/example.com/v1/namespaces/default/widgets']);
    expect(gone.code).toBe(1);
  });

  it('watches: get -w sees changes made by others', async () => {
    const w = k.start([
      'get',
      'configmaps',
      '-w',
      '--output-watch-events',
      '-o',
      'custom-columns=EVENT:.type,NAME:.object.metadata.name,A:.object.data.a',
    ]);
    await expect.poll(() => cluster.openWatches(), { timeout: 10_000 }).toBe(1);
    await k.ok(['apply', '--server-side', '-f', '-'], {
      input: 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: w2}\ndata: {a: "2"}\n',
    });
    const out = await w.waitFor(/ADDED\s+w2\s+2/);
    w.stop();
    expect(out).toMatch(/ADDED\s+w2\s+2/);
  });

  it('accepts the protobuf bodies of kubectl create generators', async () => {
    await k.ok(['create', 'namespace', 'gen']);
    await k.ok(['create', 'configmap', 'cfg', '-n', 'gen', '--from-literal=a=1']);
    await k.ok(['create', 'secret', 'generic', 'sec', '-n', 'gen', '--from-literal=p=q']);
    await k.ok(['create', 'deployment', 'gd', '-n', 'gen', '--image=nginx:1.27', '--replicas=0']);
    const cm = await k.json(['get', 'cm', 'cfg', '-n', 'gen', '--show-managed-fields']);
    expect(cm['data']).toEqual({ a: '1' });
    expect(cm['metadata']['managedFields'][0]).toMatchObject({
      manager: 'kubectl-create',
      operation: 'Update',
      fieldsV1: { 'f:data': { '.': {}, 'f:a': {} } },
    });
    const secret = await k.json(['get', 'secret', 'sec', '-n', 'gen']);
    expect([secret['data'], secret['type']]).toEqual([{ p: 'cQ==' }, 'Opaque']);
    const d = await k.json(['get', 'deploy', 'gd', '-n', 'gen']);
    expect(d['spec']['replicas']).toBe(0);
    expect(d['spec']['strategy']).toEqual({
      type: 'RollingUpdate',
      rollingUpdate: { maxSurge: '25%', maxUnavailable: '25%' },
    });
    expect(d['spec']['template']['spec']['containers'][0]).toMatchObject({
      name: 'nginx',
      image: 'nginx:1.27',
      resources: {},
    });
  });

  it('client-side apply: last-applied annotation, strategic patch that removes dropped fields', async () => {
    const v1 = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: csa}\ndata: {a: "1", b: "2"}\n';
    const v2 = 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: csa}\ndata: {a: "3"}\n';
    expect(await k.ok(['apply', '-f', '-'], { input: v1 })).toBe('configmap/csa created\n');
    expect(await k.ok(['apply', '-f', '-'], { input: v2 })).toBe('configmap/csa configured\n');
    const cm = await k.json(['get', 'cm', 'csa', '--show-managed-fields']);
    expect(cm['data']).toEqual({ a: '3' });
    const lastApplied: string =
      cm['metadata']['annotations']['kubectl.kubernetes.io/last-applied-configuration'];
    expect(JSON.parse(lastApplied)).toEqual({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { annotations: {}, name: 'csa', namespace: 'default' },
      data: { a: '3' },
    });
    expect(cm['metadata']['managedFields'].map((m: Obj) => `${m['manager']}:${m['operation']}`)).toEqual([
      'kubectl-client-side-apply:Update',
    ]);
  });

  it('a Deployment switched to Recreate: refused with a defaulted rollingUpdate, kubectl apply retains keys', async () => {
    const deployment = (strategy: string) =>
      `apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: recreate}\nspec:\n  ${strategy}selector: {matchLabels: {app: r}}\n  template:\n    metadata: {labels: {app: r}}\n    spec: {containers: [{name: r, image: "nginx:1.27"}]}\n`;
    await k.ok(['apply', '-f', '-'], { input: deployment('') });
    const merge = await k.run([
      'patch',
      'deploy',
      'recreate',
      '--type=merge',
      '-p',
      '{"spec":{"strategy":{"type":"Recreate"}}}',
    ]);
    expect(merge.code).toBe(1);
    expect(merge.stderr).toContain(
      "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'",
    );
    // kubectl's strategic patch carries $retainKeys: [type], which drops the defaulted rollingUpdate.
    await k.ok(['apply', '-f', '-'], { input: deployment('strategy: {type: Recreate}\n  ') });
    expect((await k.json(['get', 'deploy', 'recreate']))['spec']['strategy']).toEqual({ type: 'Recreate' });
  });

  it('namespace lifecycle: Terminating, contents deleted, then gone', async () => {
    await k.ok(['apply', '--server-side', '-f', '-'], {
      input:
        'apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: team-a}\ndata: {x: "1"}\n',
    });
    const ns = await k.json(['get', 'ns', 'team-a']);
    expect(ns['metadata']['labels']).toEqual({ 'kubernetes.io/metadata.name': 'team-a' });
    expect(ns['spec']).toEqual({ finalizers: ['kubernetes'] });
    expect(ns['status']).toEqual({ phase: 'Active' });
    await k.ok(['delete', 'ns', 'team-a', '--timeout=20s']);
    const gone = await k.run(['get', 'ns', 'team-a']);
    expect(gone.stderr.trim()).toBe('Error from server (NotFound): namespaces "team-a" not found');
    const cm = await k.run(['get', 'cm', 'c', '-n', 'team-a']);
    expect(cm.code).toBe(1);
  });

  it('failure injection: an -unready image exceeds its progress deadline', async () => {
    const manifest = readFileSync(testdata('web-deployment.yaml'), 'utf8')
      .replace('name: web', 'name: stuck')
      .replace('nginx:1.27', 'nginx:1.27-unready')
      .replace('replicas: 2', 'replicas: 1\n  progressDeadlineSeconds: 1');
    await k.ok(['apply', '--server-side', '-f', '-'], { input: manifest });
    const r = await k.run(['rollout', 'status', 'deploy/stuck', '--timeout=20s']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('deployment "stuck" exceeded its progress deadline');
    const d = await k.json(['get', 'deploy', 'stuck']);
    const progressing = d['status']['conditions'].find((c: Obj) => c['type'] === 'Progressing');
    expect(progressing).toMatchObject({ status: 'False', reason: 'ProgressDeadlineExceeded' });
  });
});
