/**
 * The deploy/ manifests hold together: the DaemonSet's flags and the ConfigMap's eviction
 * config go through evictd's own parsers, the DaemonSet asks for what the issue lists and no
 * more, and the ClusterRole grants exactly the API calls the Kubernetes side makes (recorded
 * from a run against the in-repo fake API server).
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, test } from 'node:test';
import { parseFlags, settingsFromFlags } from '../../src/cli/run';
import { ApiPodSource } from '../../src/kube/api-pod-source';
import { EvictionReporter } from '../../src/kube/eviction-reporter';
import { readKubeletVersion } from '../../src/kube/kubelet-version';
import { skipped } from '../support/environment';
import { FakeApiServer, makePod } from './fake-api-server';
import { client } from './helpers';
import { waitFor } from '../support/wait';
import { deployDir, docs, type Doc } from './manifests';
import { expandVars } from '../../src/lab/daemonset';
import { SHIPPED_NODE_ARGS } from '../../src/lab/shipped';

/** The DaemonSet's args with the config path pointed at the ConfigMap's file, written to a temp dir. */
function daemonSetArgs(): string[] {
  const [cm] = docs('configmap.yaml');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-deploy-'));
  fs.writeFileSync(path.join(dir, 'config.yaml'), cm.data['config.yaml']);
  const [ds] = docs('daemonset.yaml');
  const args: string[] = ds.spec.template.spec.containers[0].args;
  assert.equal(args[0], 'run');
  // host paths of a node, not of this machine: point them at stand-ins that exist here; the
  // env's $(VAR)s expanded as the kubelet does, with a node's values
  return args
    .slice(1)
    .map((a) =>
      expandVars(a, { NODE_NAME: 'node-a', HOST_IP: '10.0.0.7' })
        .replace('/etc/evictd/config.yaml', path.join(dir, 'config.yaml'))
        .replace('/var/lib/kubelet', dir),
    );
}

describe('deploy/', () => {
  test('DaemonSet: host PID, cgroup and runtime-socket mounts, only KILL, SYS_NICE (--realtime-priority), BPF and PERFMON (the tripwire; no SYS_ADMIN), IPC_LOCK (--lock-memory), requests and limits, system-node-critical', () => {
    const [ds] = docs('daemonset.yaml');
    assert.equal(ds.kind, 'DaemonSet');
    const pod = ds.spec.template.spec;
    assert.equal(pod.hostPID, true);
    assert.equal(pod.priorityClassName, 'system-node-critical');
    assert.equal(pod.serviceAccountName, 'evictd');
    const c = pod.containers[0];
    assert.deepEqual(c.securityContext.capabilities, { drop: ['ALL'], add: ['KILL', 'SYS_NICE', 'BPF', 'PERFMON', 'IPC_LOCK'] });
    assert.equal(c.securityContext.privileged, false);
    assert.equal(c.securityContext.allowPrivilegeEscalation, false);
    assert.ok(c.resources.requests.cpu && c.resources.requests.memory && c.resources.limits.memory);
    const hostPaths = Object.fromEntries(pod.volumes.filter((v: Doc) => v.hostPath).map((v: Doc) => [v.name, v.hostPath.path]));
    const mounts = Object.fromEntries(c.volumeMounts.map((m: Doc) => [m.name, m.mountPath]));
    assert.equal(hostPaths.cgroup, '/sys/fs/cgroup');
    assert.equal(mounts.cgroup, '/sys/fs/cgroup');
    const flag = (name: string) => c.args.find((a: string) => a.startsWith(`--${name}=`))!.split('=')[1];
    // The runtime socket's directory is mounted, not the socket file: containerd makes a new
    // socket when it restarts, which a file mount would never show.
    const endpoint = flag('container-runtime-endpoint');
    assert.equal(path.dirname(endpoint.replace(/^unix:\/\//, '')), hostPaths['containerd-run'], 'the endpoint sits in the mounted directory');
    assert.equal(mounts['containerd-run'], hostPaths['containerd-run']);
    // What the kubelet's layout puts where the agent reads it, each at its host path.
    for (const name of ['kubelet-root', 'pod-logs', 'containerd-root', 'state']) assert.equal(mounts[name], hostPaths[name], name);
    assert.equal(hostPaths['pod-logs'], '/var/log/pods', 'container log sizes');
    assert.equal(hostPaths['containerd-root'], '/var/lib/containerd', "the image filesystem (ImageFsInfo's mountpoint)");
    const readOnly = new Set(c.volumeMounts.filter((m: Doc) => m.readOnly).map((m: Doc) => m.name));
    for (const name of ['kubelet-root', 'pod-logs', 'containerd-root']) assert.ok(readOnly.has(name), `${name} is read-only`);
    // The brakes' record outlives the container (a hostPath on the host's tmpfs) and is writable
    // beside the read-only root filesystem.
    assert.equal(c.securityContext.readOnlyRootFilesystem, true);
    assert.equal(hostPaths.state, flag('state-dir'));
    assert.ok(!readOnly.has('state'), 'the state dir is writable');
    const env = c.env.find((e: Doc) => e.name === 'NODE_NAME');
    assert.equal(env.valueFrom.fieldRef.fieldPath, 'spec.nodeName');
    // The metrics server on the node's address (the pod's, on the host network), where the
    // kubelet's probes reach it by the container port's name.
    const metrics = c.args.find((a: string) => a.startsWith('--metrics-address='))!.split('=')[1];
    assert.equal(c.env.find((e: Doc) => e.name === 'HOST_IP')?.valueFrom.fieldRef.fieldPath, 'status.hostIP');
    const port = c.ports.find((p: Doc) => p.name === 'metrics');
    assert.equal(metrics, `$(HOST_IP):${port.containerPort}`);
    for (const probe of [c.startupProbe, c.livenessProbe, c.readinessProbe]) {
      assert.equal(probe.httpGet.port, 'metrics', 'probes reach the metrics server');
      assert.equal(probe.httpGet.host, undefined, "the pod's address: the node's");
    }
    // Started after the first pass; then two questions: a runtime outage makes evictd not ready,
    // it does not get it restarted.
    assert.equal(c.startupProbe.httpGet.path, '/livez');
    assert.equal(c.livenessProbe.httpGet.path, '/livez');
    assert.equal(c.readinessProbe.httpGet.path, '/readyz');
  });

  test("the DaemonSet's flags and the ConfigMap's config parse with evictd's own CLI", () => {
    const settings = settingsFromFlags(parseFlags(daemonSetArgs()));
    assert.equal(settings.podSource, 'api');
    const hard = settings.policy.thresholds.filter((t) => t.kind === 'hard').map((t) => `${t.signal}<${t.value.text}`);
    // allocatableMemory.available mirrors memory.available under the default enforceNodeAllocatable=pods, as in the kubelet
    assert.deepEqual(hard.sort(), [
      'allocatableMemory.available<500Mi',
      'imagefs.available<15%',
      'memory.available<500Mi',
      'nodefs.available<10%',
      'nodefs.inodesFree<5%',
    ]);
    assert.ok(settings.policy.thresholds.some((t) => t.kind === 'soft' && t.signal === 'memory.available'));
  });

  test("the systemd unit's command line parses with evictd's own CLI; systemd-analyze accepts the unit", (t) => {
    const unit = fs.readFileSync(path.join(deployDir, 'evictd.service'), 'utf8');
    const exec = /^ExecStart=((?:.*\\\n)*.*)$/m.exec(unit)![1].replace(/\\\n\s*/g, ' ');
    const argv = exec.trim().split(/\s+/);
    // node runs it as everywhere it is shipped (src/lab/shipped.ts: the lab's runs measure the same)
    const script = 1 + SHIPPED_NODE_ARGS.length;
    assert.deepEqual(argv.slice(0, script + 2), ['/usr/bin/node', ...SHIPPED_NODE_ARGS, '/opt/evictd/bin/evictd.js', 'run']);
    const flags = parseFlags(argv.slice(script + 2));
    assert.equal(flags['pod-source'], 'api');
    assert.equal(flags.kubeconfig, '/etc/evictd/kubeconfig');
    // ProtectSystem=strict leaves /run read-only: the state dir is the unit's runtime directory,
    // kept across restarts so that the next process releases the brakes the last one set.
    assert.equal(flags['state-dir'], '/run/evictd');
    assert.match(unit, /^RuntimeDirectory=evictd$/m);
    assert.match(unit, /^RuntimeDirectoryPreserve=yes$/m);
    assert.match(unit, /^ProtectSystem=strict$/m);
    // evictd says READY=1 and pings the watchdog while its loop is alive (src/cli/run.ts).
    assert.match(unit, /^Type=notify$/m);
    assert.match(unit, /^WatchdogSec=\d+s$/m);
    let analyze: string | undefined;
    try {
      analyze = execFileSync('sh', ['-c', 'command -v systemd-analyze'], { encoding: 'utf8' }).trim();
    } catch {
      analyze = undefined;
    }
    // .ci/run installs it (Debian's systemd package): in CI its absence fails the test.
    if (!analyze) {
      skipped(t, 'systemd-analyze not installed (Debian package systemd)');
      return;
    }
    const out = execFileSync(analyze, ['verify', path.join(deployDir, 'evictd.service')], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    assert.equal(out.trim(), '');
  });

  test('RBAC grants exactly the API calls evictd makes, and nothing broader', async () => {
    const role = docs('rbac.yaml').find((d) => d.kind === 'ClusterRole');
    const granted = new Set<string>();
    for (const r of role.rules) {
      assert.deepEqual(r.apiGroups, [''], 'core group only');
      for (const res of r.resources) for (const v of r.verbs) granted.add(`${v} ${res}`);
    }
    assert.ok(![...granted].some((g) => g.includes('*') || g.startsWith('delete') || g.includes('secrets')), [...granted].join(', '));

    // Record the calls of a real run: list + watch, an eviction with a retried status patch.
    const api = new FakeApiServer();
    const kc = client(await api.start(), 300);
    try {
      api.addPod(makePod('victim'));
      const source = new ApiPodSource({ client: kc, nodeName: 'node-a', initialBackoffMs: 10 });
      await source.start();
      await waitFor('watch', () => api.openWatches === 1);
      api.faults.push({ match: (r) => r.method === 'PATCH', status: 500 });
      const reporter = new EvictionReporter({ client: kc, nodeName: 'node-a', initialBackoffMs: 5 });
      await reporter.report({
        pod: { namespace: 'default', name: 'victim', uid: 'uid-victim' },
        signal: 'memory.available',
        gracePeriodSeconds: 0,
        message: 'm',
        annotations: {},
      });
      // At start and every 10 minutes: the kubelet's release (HugepageAwareEviction's default).
      api.nodes.set('node-a', { kind: 'Node', metadata: { name: 'node-a' }, status: { nodeInfo: { kubeletVersion: 'v1.36.2' } } });
      assert.equal(await readKubeletVersion(kc, 'node-a'), 'v1.36.2');
      await source.stopped();
    } finally {
      kc.close();
      await api.stop();
    }
    const used = new Set<string>();
    for (const r of api.requests) {
      const p = r.path.split('/').filter(Boolean);
      if (r.method === 'GET' && r.path === '/api/v1/pods') used.add(r.query.get('watch') === 'true' ? 'watch pods' : 'list pods');
      else if (r.method === 'GET' && p[4] === 'pods' && p.length === 6) used.add('get pods');
      else if (r.method === 'PATCH' && p[6] === 'status') used.add('patch pods/status');
      else if (r.method === 'POST' && p[4] === 'events') used.add('create events');
      else if (r.method === 'GET' && p[2] === 'nodes' && p.length === 4) used.add('get nodes');
      else assert.fail(`unexpected call ${r.method} ${r.path}`);
    }
    assert.deepEqual([...used].sort(), [...granted].sort());
  });

  test('node-restriction.yaml is present and well-formed', () => {
    const [policy, binding] = docs('node-restriction.yaml');
    assert.equal(policy.kind, 'ValidatingAdmissionPolicy');
    assert.equal(binding.spec.policyName, policy.metadata.name);
    assert.match(policy.spec.matchConditions[0].expression, /system:serviceaccount:kube-system:evictd/);
    const sa = docs('rbac.yaml').find((d) => d.kind === 'ServiceAccount');
    assert.equal(`system:serviceaccount:${sa.metadata.namespace}:${sa.metadata.name}`, 'system:serviceaccount:kube-system:evictd');
  });
});
