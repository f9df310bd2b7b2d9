/**
 * deploy/daemonset.yaml as the lab runs it (src/lab/daemonset.ts): every mount, the security
 * context and the pod's host namespaces reach the CRI specs as written, and a field the
 * translation does not carry is refused by name instead of dropped.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { containerConfig, sandboxConfig } from '../../src/lab/sandbox-config';
import { daemonSetToCri, expandVars, type DaemonSetLabMapping } from '../../src/lab/daemonset';
import { docs, type Doc } from './manifests';

const volumes = {
  config: '/lab/config',
  cgroup: '/sys/fs/cgroup',
  'containerd-run': '/lab/run-containerd',
  'kubelet-root': '/lab/kubelet',
  'pod-logs': '/lab/pods',
  'containerd-root': '/lab/containerd-root',
  state: '/lab/state',
  tmp: '/lab/tmp',
};
const mapping: DaemonSetLabMapping = {
  volumes,
  fieldRefs: { NODE_NAME: 'node-a', HOST_IP: '10.0.0.7' },
  replaceArgs: { '--pod-source=api': '--pod-source=runtime' },
  extraArgs: ['--memory-brake'],
};
const pod = { name: 'evictd', namespace: 'kube-system', uid: 'u1' };
const daemonSet = () => docs('daemonset.yaml')[0] as Doc;

test("the DaemonSet's container reaches CRI as written: mounts, security context, host PID, limit, args, env", () => {
  const ds = daemonSet();
  const c = ds.spec.template.spec.containers[0];
  const { pod: p, container } = daemonSetToCri(ds, mapping, pod);
  assert.equal(p.hostPid, true);
  assert.equal(sandboxConfig(p).linux?.securityContext?.namespaceOptions?.pid, 'NODE');
  const cfg = containerConfig(p, container);
  // Every volume mount, at its path, from the lab's stand-in, read-only and propagation as written.
  for (const vm of c.volumeMounts as Doc[]) {
    const m = cfg.mounts!.find((x) => x.containerPath === vm.mountPath);
    assert.ok(m, `${vm.name} mounted at ${vm.mountPath}`);
    assert.equal(m.hostPath, volumes[vm.name as keyof typeof volumes]);
    assert.equal(m.readonly, vm.readOnly === true, `${vm.name} read-only as written`);
    assert.equal(m.propagation, vm.mountPropagation === 'HostToContainer' ? 'PROPAGATION_HOST_TO_CONTAINER' : 'PROPAGATION_PRIVATE', `${vm.name} propagation`);
  }
  assert.equal(cfg.mounts!.length, c.volumeMounts.length, 'the volumes alone: the image holds evictd');
  assert.deepEqual(cfg.image, { image: c.image }, 'the image as written');
  const sc = cfg.linux!.securityContext!;
  assert.deepEqual(sc.capabilities, { addCapabilities: ['KILL', 'SYS_NICE', 'BPF', 'PERFMON', 'IPC_LOCK'], dropCapabilities: ['ALL'] });
  assert.equal(sc.readonlyRootfs, true);
  assert.equal(sc.noNewPrivs, true, 'allowPrivilegeEscalation: false');
  assert.equal(sc.privileged, false);
  assert.deepEqual(sc.runAsUser, { value: 0 });
  assert.deepEqual(sc.runAsGroup, { value: 0 });
  assert.deepEqual(sc.seccomp, { profileType: 'RuntimeDefault' });
  assert.equal(sc.namespaceOptions?.pid, 'NODE');
  assert.equal(cfg.linux!.resources!.memoryLimitInBytes, 256 * 2 ** 20);
  assert.deepEqual(cfg.command, [], "no command: the image's entrypoint, as the kubelet leaves it");
  const asWritten = (c.args as string[]).map((a) => (a === '--pod-source=api' ? '--pod-source=runtime' : a));
  assert.deepEqual(cfg.args, [...asWritten.map((a) => a.replace('$(HOST_IP)', '10.0.0.7')), '--memory-brake']);
  assert.ok(cfg.args!.includes('--metrics-address=10.0.0.7:9741'), 'the metrics on the node address, expanded from the env as the kubelet does');
  assert.deepEqual(cfg.envs, [
    { key: 'NODE_NAME', value: 'node-a' },
    { key: 'HOST_IP', value: '10.0.0.7' },
  ]);
});

test("expandVars: the kubelet's $(VAR) in args, $$ escaped, an unknown name left as written", () => {
  assert.equal(expandVars('--a=$(X):1', { X: 'v' }), '--a=v:1');
  assert.equal(expandVars('$$(X) $(Y) $X', { X: 'v' }), '$(X) $(Y) $X');
});

test('what the translation does not carry is refused by name: a new container field, a security field, an unmapped volume, an env without a value', () => {
  const withField = daemonSet();
  withField.spec.template.spec.containers[0].workingDir = '/x';
  assert.throws(() => daemonSetToCri(withField, mapping, pod), /^Error: containers\[0\]\.workingDir: not translated for the lab$/);
  const withSecurity = daemonSet();
  withSecurity.spec.template.spec.containers[0].securityContext.procMount = 'Unmasked';
  assert.throws(() => daemonSetToCri(withSecurity, mapping, pod), /securityContext\.procMount: not translated/);
  const { state: _state, ...fewer } = volumes;
  assert.throws(() => daemonSetToCri(daemonSet(), { ...mapping, volumes: fewer }, pod), /volumes\[state\]: no host directory given for the lab/);
  assert.throws(() => daemonSetToCri(daemonSet(), { ...mapping, fieldRefs: {} }, pod), /env\[NODE_NAME\]: no value given for the lab/);
});
