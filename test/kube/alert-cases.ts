/**
 * A case per alert of deploy/prometheus-rules.yaml for `promtool test rules`: series that must
 * fire it (with the labels it must carry) and series of a healthy node that must not. The test
 * writes promtool's file from these (operator-files.test.ts), with each alert's annotations as
 * the rules file gives them, its templates filled from the alert's labels (`annotationsFor`).
 */

export interface AlertCase {
  alert: string;
  /** promtool's input series (expanding notation), one minute apart */
  firing: { series: string; values: string }[];
  /** when the alert is checked, and the labels it must have then (severity and alertname aside) */
  at: string;
  labels: Record<string, string>;
  /** series under which the alert must stay silent at `at` */
  quiet: { series: string; values: string }[];
}

const I = 'instance="node-a:9741"';
const J = 'job="evictd"';

export const ALERT_CASES: AlertCase[] = [
  {
    alert: 'EvictdTargetDown',
    firing: [{ series: `up{${J}, ${I}}`, values: '0x10' }],
    at: '6m',
    labels: { job: 'evictd', instance: 'node-a:9741' },
    quiet: [{ series: `up{${J}, ${I}}`, values: '1x10' }],
  },
  {
    // No target at all (the DaemonSet gone, or discovery broken): absent() carries only the job.
    alert: 'EvictdTargetDown',
    firing: [{ series: `up{job="other", ${I}}`, values: '1x10' }],
    at: '6m',
    labels: { job: 'evictd' },
    quiet: [{ series: `up{${J}, ${I}}`, values: '1x10' }],
  },
  {
    alert: 'EvictdLoopStalled',
    firing: [{ series: `evictd_passes_total{${J}, ${I}}`, values: '7x15' }],
    at: '11m',
    labels: { job: 'evictd', instance: 'node-a:9741' },
    quiet: [{ series: `evictd_passes_total{${J}, ${I}}`, values: '0+6x15' }],
  },
  {
    alert: 'EvictdPassesFailing',
    firing: [{ series: `evictd_pass_errors_total{${J}, ${I}}`, values: '0+1x15' }],
    at: '11m',
    labels: { job: 'evictd', instance: 'node-a:9741' },
    quiet: [{ series: `evictd_pass_errors_total{${J}, ${I}}`, values: '3x15' }],
  },
  {
    alert: 'EvictdRuntimeErrors',
    firing: [{ series: `evictd_runtime_errors_total{${J}, ${I}, call="listPods"}`, values: '0+60x30' }],
    at: '16m',
    labels: { instance: 'node-a:9741', call: 'listPods' },
    // One failure a minute is below the alert's 0.1/s: a runtime that hiccups, not one that is down.
    quiet: [{ series: `evictd_runtime_errors_total{${J}, ${I}, call="listPods"}`, values: '0+1x30' }],
  },
  {
    alert: 'EvictdEvictionsFailing',
    firing: [{ series: `evictd_eviction_failures_total{${J}, ${I}, signal="memory.available", step="stop"}`, values: '0 0 0 1 1 1' }],
    at: '4m',
    labels: { instance: 'node-a:9741', signal: 'memory.available' },
    quiet: [{ series: `evictd_eviction_failures_total{${J}, ${I}, signal="memory.available", step="stop"}`, values: '2x6' }],
  },
  {
    alert: 'EvictdNodePressure',
    firing: [{ series: `evictd_node_condition{${J}, ${I}, condition="MemoryPressure"}`, values: '1x10' }],
    at: '6m',
    labels: { instance: 'node-a:9741', condition: 'MemoryPressure' },
    // Pressure for 3 minutes, then none: shorter than the alert's 5 minutes.
    quiet: [{ series: `evictd_node_condition{${J}, ${I}, condition="MemoryPressure"}`, values: '1 1 1 0 0 0 0' }],
  },
  {
    alert: 'EvictdPodsEvicted',
    firing: [{ series: `evictd_evictions_total{${J}, ${I}, signal="memory.available"}`, values: '0 0 1 1' }],
    at: '3m',
    labels: { instance: 'node-a:9741', signal: 'memory.available' },
    quiet: [{ series: `evictd_evictions_total{${J}, ${I}, signal="memory.available"}`, values: '4x4' }],
  },
  {
    alert: 'EvictdBrakedPodsStopped',
    firing: [{ series: `evictd_brake_stops_total{${J}, ${I}}`, values: '0 1 1' }],
    at: '2m',
    labels: { instance: 'node-a:9741' },
    quiet: [{ series: `evictd_brake_stops_total{${J}, ${I}}`, values: '0x3' }],
  },
  {
    alert: 'EvictdMemoryLinePolled',
    firing: [{ series: `evictd_memory_line_mechanism{${J}, ${I}, line="node:line0", mechanism="adaptive-poll"}`, values: '1x20' }],
    at: '16m',
    labels: { instance: 'node-a:9741', line: 'node:line0' },
    quiet: [{ series: `evictd_memory_line_mechanism{${J}, ${I}, line="node:line0", mechanism="bpf-tripwire"}`, values: '1x20' }],
  },
  {
    alert: 'EvictdPodSpecsStale',
    firing: [{ series: `evictd_kube_pod_source_healthy{${J}, ${I}}`, values: '0x10' }],
    at: '6m',
    labels: { instance: 'node-a:9741' },
    quiet: [{ series: `evictd_kube_pod_source_healthy{${J}, ${I}}`, values: '1x10' }],
  },
  {
    alert: 'EvictdEvictionsNotReported',
    firing: [{ series: `evictd_kube_write_failures_total{${J}, ${I}}`, values: '0 0 1 1' }],
    at: '3m',
    labels: { instance: 'node-a:9741' },
    quiet: [{ series: `evictd_kube_write_failures_total{${J}, ${I}}`, values: '0x4' }],
  },
];

/**
 * An alert's annotations as Prometheus renders them for `labels`: the two template forms the
 * rules use, `{{ $labels.x }}` and `{{ with $labels.x }}...{{ . }}...{{ end }}`; any other form
 * is refused (the rules file gained one this does not know).
 */
export function annotationsFor(annotations: Record<string, string>, labels: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, text] of Object.entries(annotations)) {
    const filled = text
      .replace(/\{\{ with \$labels\.(\w+) \}\}(.*?)\{\{ \. \}\}(.*?)\{\{ end \}\}/g, (_m, name: string, before: string, after: string) =>
        labels[name] ? `${before}${labels[name]}${after}` : '',
      )
      .replace(/\{\{ \$labels\.(\w+) \}\}/g, (_m, name: string) => labels[name] ?? '');
    if (filled.includes('{{')) throw new Error(`${k}: a template form the test does not render: ${text}`);
    out[k] = filled;
  }
  return out;
}
