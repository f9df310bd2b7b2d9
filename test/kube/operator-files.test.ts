/**
 * The operators' files in deploy/ (the Prometheus alert rules, the Grafana dashboard) name only
 * metrics that a real `evictd run` serves: its /metrics is scraped with the Kubernetes pod source
 * on (against the in-repo fake API server), so the kube metrics are there too; not a dry run (the
 * eviction writer's metrics exist only then), on a pod cgroup root that holds no pod.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { stringify } from 'yaml';
import { FakeApiServer, writeKubeconfig } from './fake-api-server';
import { deployDir, docs, type Doc } from './manifests';
import { ALERT_CASES, annotationsFor } from './alert-cases';
import { skipped } from '../support/environment';
import { PROMTOOL_MISSING, promtool, promtoolPath } from '../support/promtool';
import { waitFor } from '../support/wait';

const bin = path.resolve(__dirname, '../../../bin/evictd.js');

function get(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        let body = '';
        res.on('data', (d) => (body += d));
        res.on('end', () => resolve(body));
      })
      .on('error', reject);
  });
}

/** The metric families a PromQL expression reads (histogram series named by their family). */
function metricsIn(expr: string): string[] {
  return [...expr.matchAll(/\bevictd_[a-z0-9_]+/g)].map((m) => m[0].replace(/_(bucket|sum|count)$/, ''));
}

/** prom-client's default metrics that break promtool's naming lint: gauges named _total (nodejs_active_*_total), kept under the names stock dashboards use. */
const PROM_CLIENT_NAMES = /^nodejs_active_(handles|requests|resources)_total non-counter metrics should not have "_total" suffix$/;

const rulesFile = path.join(deployDir, 'prometheus-rules.yaml');

describe('deploy/ operator files against a real /metrics', () => {
  let api: FakeApiServer;
  let child: ChildProcess;
  let families: Set<string>;
  let scrape: string;

  before(async () => {
    api = new FakeApiServer();
    api.token = 't0k3n';
    const url = await api.start();
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-operator-'));
    const kubeconfig = path.join(tmp, 'kubeconfig');
    writeKubeconfig(kubeconfig, url);
    const state = path.join(tmp, 'state');
    child = spawn(
      process.execPath,
      [
        bin,
        'run',
        '--pod-source=api',
        '--pod-cgroup-root=/evictd-operator-test-no-pods',
        '--eviction-hard=memory.available<1Ki',
        `--kubeconfig=${kubeconfig}`,
        '--node-name=node-a',
        '--notifications=none',
        '--metrics-address=127.0.0.1:0',
        '--container-runtime-endpoint=unix:///nonexistent/evictd.sock',
        `--state-dir=${state}`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
    const starting = await waitFor('evictd starting', () => out.split('\n').find((l) => l.includes('"evictd starting"')), 20_000);
    const address = (JSON.parse(starting) as { metricsAddress: string }).metricsAddress;
    const text = (scrape = await get(`http://${address}/metrics`));
    families = new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]!));
    assert.ok(families.has('evictd_kube_pod_source_healthy'), 'the scrape has the Kubernetes metrics');
  });

  after(async () => {
    child?.kill('SIGTERM');
    await api?.stop();
  });

  test('the alert rules: each alert well formed, every metric it reads served', () => {
    const [file] = docs('prometheus-rules.yaml') as Doc[];
    const rules: Doc[] = file.groups.flatMap((g: Doc) => g.rules);
    assert.ok(rules.length >= 8);
    assert.equal(new Set(rules.map((r) => r.alert)).size, rules.length, 'alert names are unique');
    for (const r of rules) {
      assert.match(r.alert, /^Evictd[A-Za-z]+$/);
      assert.ok(['critical', 'warning', 'info'].includes(r.labels?.severity), `${r.alert}: severity`);
      assert.ok(r.annotations?.summary && r.annotations?.description, `${r.alert}: summary and description`);
      assert.match(r.annotations?.runbook_url ?? '', new RegExp(`^docs/runbook\\.md#${r.alert.toLowerCase()}$`), `${r.alert}: runbook_url`);
      const used = metricsIn(r.expr);
      // The one alert on Prometheus's own series: the scrape of evictd failing, or no evictd to scrape.
      if (r.alert === 'EvictdTargetDown') assert.match(r.expr, /\bup\{job="evictd"\}/);
      else assert.ok(used.length > 0, `${r.alert}: reads an evictd metric`);
      for (const m of used) assert.ok(families.has(m), `${r.alert}: ${m} is not served by evictd run`);
    }
  });

  test('docs/metrics.md: every family evictd serves is described, and every family it names is served', () => {
    const doc = fs.readFileSync(path.join(deployDir, '..', 'docs', 'metrics.md'), 'utf8');
    const named = new Set([...doc.matchAll(/`(evictd_[a-z0-9_]+)/g)].map((m) => m[1]!));
    const served = [...families].filter((f) => f.startsWith('evictd_'));
    for (const f of served) assert.ok(named.has(f), `docs/metrics.md does not describe ${f}`);
    for (const f of named) assert.ok(families.has(f) || /^evictd_(process|nodejs)_$/.test(f), `docs/metrics.md names ${f}, which evictd run does not serve`);
  });

  test('the runbook: a section per alert, under the anchor its runbook_url names', () => {
    const runbook = fs.readFileSync(path.join(deployDir, '..', 'docs', 'runbook.md'), 'utf8');
    const anchors = new Set([...runbook.matchAll(/^## (\S+)$/gm)].map((m) => m[1]!.toLowerCase()));
    const [file] = docs('prometheus-rules.yaml') as Doc[];
    for (const r of file.groups.flatMap((g: Doc) => g.rules) as Doc[])
      assert.ok(anchors.has(r.alert.toLowerCase()), `docs/runbook.md has no section ${r.alert}`);
  });

  test('promtool: the rules check, every alert fires on its case and stays silent on a healthy node, the scrape passes its lint', (t) => {
    const bin = promtoolPath();
    if (skipped(t, bin === null ? PROMTOOL_MISSING : null)) return;
    const check = promtool(bin!, ['check', 'rules', rulesFile]);
    assert.equal(check.status, 0, check.out);
    const [file] = docs('prometheus-rules.yaml') as Doc[];
    const rules = new Map((file.groups.flatMap((g: Doc) => g.rules) as Doc[]).map((r) => [r.alert as string, r]));
    assert.deepEqual([...new Set(ALERT_CASES.map((c) => c.alert))].sort(), [...rules.keys()].sort(), 'a case for every alert');
    const tests = ALERT_CASES.flatMap((c) => {
      const rule = rules.get(c.alert)!;
      const labels = { ...c.labels, severity: rule.labels.severity as string };
      const fires = {
        interval: '1m',
        input_series: c.firing,
        alert_rule_test: [
          { eval_time: c.at, alertname: c.alert, exp_alerts: [{ exp_labels: labels, exp_annotations: annotationsFor(rule.annotations, labels) }] },
        ],
      };
      const quiet = { interval: '1m', input_series: c.quiet, alert_rule_test: [{ eval_time: c.at, alertname: c.alert, exp_alerts: [] }] };
      return [fires, quiet];
    });
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'evictd-promtool-'));
    const testFile = path.join(dir, 'alerts.test.yaml');
    fs.writeFileSync(testFile, stringify({ rule_files: [rulesFile], evaluation_interval: '1m', tests }));
    const run = promtool(bin!, ['test', 'rules', testFile]);
    assert.equal(run.status, 0, run.out);
    // The real scrape of evictd run, through promtool's naming lint.
    const lint = promtool(bin!, ['check', 'metrics'], scrape);
    const problems = lint.out.split('\n').filter((l) => l.trim() !== '' && !PROM_CLIENT_NAMES.test(l.trim()));
    assert.deepEqual(problems, [], lint.out);
  });

  test('the Grafana dashboard: valid JSON, every panel queries metrics evictd serves', () => {
    const dash = JSON.parse(fs.readFileSync(path.join(deployDir, 'grafana-dashboard.json'), 'utf8')) as Doc;
    assert.equal(dash.uid, 'evictd');
    const exprs: string[] = [
      dash.templating.list.find((v: Doc) => v.name === 'instance').query,
      ...dash.panels.flatMap((p: Doc) => p.targets.map((t: Doc) => t.expr)),
    ];
    assert.ok(dash.panels.length >= 8);
    for (const e of exprs) {
      const used = metricsIn(e);
      assert.ok(used.length > 0, `reads an evictd metric: ${e}`);
      for (const m of used) assert.ok(families.has(m), `${m} is not served by evictd run (${e})`);
    }
  });
});
