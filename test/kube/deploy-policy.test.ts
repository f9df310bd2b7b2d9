/**
 * deploy/ as one whole: every object parses, the kustomization lists every manifest, the node
 * confinement included (what `kubectl apply -k deploy/` would apply; no kubectl runs here), the DaemonSet refers only to objects deploy/ defines, and the
 * node confinement policy's CEL, parsed and evaluated with a CEL implementation, lets evictd
 * write about its own node and nothing else.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { describe, test } from 'node:test';
import { isCelError, run } from '@bufbuild/cel';
import { deployDir, docs, type Doc } from './manifests';

/** The Kubernetes manifests (the Prometheus rules file is for Prometheus, not the API server). */
const manifests = () => fs.readdirSync(deployDir).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml' && f !== 'prometheus-rules.yaml');
/** Applied apart, where prometheus-operator's CRDs exist: `kubectl apply -k` must work without them. */
const OPERATOR_ONLY = ['podmonitor.yaml'];
const all = () => manifests().flatMap((f) => docs(f).map((d) => ({ file: f, doc: d })));

/** CEL maps are Maps: plain objects in, recursively (numbers as CEL ints). */
function cel(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(cel);
  if (v !== null && typeof v === 'object') return new Map(Object.entries(v).map(([k, x]) => [k, cel(x)]));
  if (typeof v === 'number' && Number.isInteger(v)) return BigInt(v);
  return v;
}

function evalCel(expr: string, bindings: Record<string, unknown>): unknown {
  const out = run(expr, Object.fromEntries(Object.entries(bindings).map(([k, v]) => [k, cel(v)])) as never);
  if (isCelError(out)) throw new Error(`${expr}: ${String(out)}`);
  return out;
}

/** What the API server decides for one request under the policy: 'skip' (not matched), 'allow' or the first failing message. */
function admit(policy: Doc, request: Doc, object: Doc): string {
  for (const m of policy.spec.matchConditions ?? []) if (evalCel(m.expression, { request, object }) !== true) return 'skip';
  const variables: Record<string, unknown> = {};
  for (const v of policy.spec.variables ?? []) variables[v.name] = evalCel(v.expression, { request, object, variables });
  for (const v of policy.spec.validations) if (evalCel(v.expression, { request, object, variables }) !== true) return v.message;
  return 'allow';
}

const EVICTD = 'system:serviceaccount:kube-system:evictd';
const as = (node: string | null, resource: 'pods' | 'events', username = EVICTD) => ({
  userInfo: { username, extra: node === null ? {} : { 'authentication.kubernetes.io/node-name': [node] } },
  resource: { group: '', version: 'v1', resource },
});
const pod = (nodeName: string) => ({ metadata: { name: 'p', namespace: 'default' }, spec: { nodeName } });
const event = (host: string, kind: 'Pod' | 'Node', about: string) => ({
  source: { component: 'evictd', host },
  reportingComponent: 'evictd',
  reportingInstance: host,
  involvedObject: { kind, name: about },
});

describe('deploy/ as a whole', () => {
  test('every object of every manifest parses and is a Kubernetes object', () => {
    const objs = all();
    assert.deepEqual(objs.map((o) => o.doc.kind).sort(), [
      'ClusterRole',
      'ClusterRoleBinding',
      'ConfigMap',
      'DaemonSet',
      'PodMonitor',
      'ServiceAccount',
      'ValidatingAdmissionPolicy',
      'ValidatingAdmissionPolicyBinding',
    ]);
    for (const { file, doc } of objs) assert.ok(doc.apiVersion && doc.kind && doc.metadata?.name, `${file}: ${JSON.stringify(doc).slice(0, 80)}`);
  });

  test('deploy/kustomization.yaml lists every manifest of deploy/ (what kubectl apply -k applies) but the PodMonitor, the node confinement included', () => {
    const [k] = docs('kustomization.yaml');
    assert.equal(k.kind, 'Kustomization');
    assert.deepEqual(
      [...k.resources].sort(),
      manifests()
        .filter((f) => !OPERATOR_ONLY.includes(f))
        .sort(),
    );
    assert.ok(k.resources.includes('node-restriction.yaml'));
  });

  test("the PodMonitor scrapes the DaemonSet's metrics port on its pods, as the job the alert rules select", () => {
    const [pm] = docs('podmonitor.yaml');
    const [ds] = docs('daemonset.yaml');
    const tpl = ds.spec.template;
    assert.equal(pm.metadata.namespace, ds.metadata.namespace);
    for (const [k, v] of Object.entries(pm.spec.selector.matchLabels as Record<string, string>))
      assert.equal(tpl.metadata.labels[k], v, `selects the DaemonSet's pods by ${k}`);
    assert.equal(tpl.metadata.labels[pm.spec.jobLabel], 'evictd', 'the job label the rules and the dashboard select');
    const port = pm.spec.podMetricsEndpoints[0].port;
    assert.ok(
      (tpl.spec.containers[0].ports as Doc[]).some((p) => p.name === port),
      `the container has a port named ${port}`,
    );
    assert.ok((tpl.spec.containers[0].args as string[]).includes('--metrics-address=$(HOST_IP):9741'), "metrics on the node's address");
  });

  test('the DaemonSet refers only to what deploy/ defines', () => {
    const objs = all().map((o) => o.doc);
    const [ds] = docs('daemonset.yaml');
    const ns = ds.metadata.namespace;
    const defined = (kind: string, name: string) => objs.some((d) => d.kind === kind && d.metadata.name === name && (d.metadata.namespace ?? ns) === ns);
    const spec = ds.spec.template.spec;
    assert.ok(defined('ServiceAccount', spec.serviceAccountName), `ServiceAccount ${spec.serviceAccountName}`);
    for (const v of spec.volumes) if (v.configMap) assert.ok(defined('ConfigMap', v.configMap.name), `ConfigMap ${v.configMap.name}`);
    // the one outside reference: a PriorityClass every cluster has
    assert.equal(spec.priorityClassName, 'system-node-critical');
    const binding = objs.find((d) => d.kind === 'ClusterRoleBinding');
    assert.ok(objs.some((d) => d.kind === 'ClusterRole' && d.metadata.name === binding.roleRef.name));
    assert.ok(binding.subjects.every((s: Doc) => defined(s.kind, s.name)));
    const vapb = objs.find((d) => d.kind === 'ValidatingAdmissionPolicyBinding');
    assert.ok(objs.some((d) => d.kind === 'ValidatingAdmissionPolicy' && d.metadata.name === vapb.spec.policyName));
  });

  test("the policy's CEL expressions all parse", () => {
    const [policy] = docs('node-restriction.yaml');
    const exprs = [...policy.spec.matchConditions, ...policy.spec.variables, ...policy.spec.validations].map((e: Doc) => e.expression as string);
    assert.ok(exprs.length >= 5);
    for (const e of exprs) {
      // Evaluated against an empty request: a parse error is a CelError naming the position.
      const out = run(e, { request: new Map(), object: new Map(), variables: new Map([['node', '']]) } as never);
      assert.ok(!isCelError(out) || !/expecting|mismatched|extraneous|token/i.test(String(out)), `${e}: ${String(out)}`);
    }
  });

  test("the policy lets evictd patch the status of its own node's pods only", () => {
    const [policy] = docs('node-restriction.yaml');
    assert.equal(admit(policy, as('node-a', 'pods'), pod('node-a')), 'allow');
    assert.match(admit(policy, as('node-a', 'pods'), pod('node-b')), /own node/);
    assert.match(admit(policy, as(null, 'pods'), pod('node-a')), /no node name/);
    assert.equal(admit(policy, as(null, 'pods', 'system:node:node-b'), pod('node-a')), 'skip', 'other users are not its business');
  });

  test('the policy lets evictd create events only as its own node, about that node or its pods', () => {
    const [policy] = docs('node-restriction.yaml');
    assert.equal(admit(policy, as('node-a', 'events'), event('node-a', 'Pod', 'victim')), 'allow');
    assert.equal(admit(policy, as('node-a', 'events'), event('node-a', 'Node', 'node-a')), 'allow');
    assert.match(admit(policy, as('node-a', 'events'), event('node-a', 'Node', 'node-b')), /own node/);
    assert.match(admit(policy, as('node-a', 'events'), event('node-b', 'Pod', 'victim')), /own node/);
    assert.match(admit(policy, as('node-a', 'events'), { involvedObject: { kind: 'Pod', name: 'x' } }), /own node/);
  });
});
