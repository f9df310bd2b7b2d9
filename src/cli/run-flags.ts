/**
 * `evictd run`'s flag table, its --help text, and the command line read against it. The flags
 * use the kubelet's names; what they mean is run-settings.ts's job.
 */
import { badValue, UsageError } from '../errors';

/** pino's levels, all accepted (silent turns logging off). */
export const LOG_LEVELS = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

/**
 * Kubelet map flags merge when repeated (cliflag map values keep adding keys), so a second
 * --eviction-hard adds to the first instead of replacing it.
 */
const MAP_FLAGS = new Set(['eviction-hard', 'eviction-soft', 'eviction-soft-grace-period', 'eviction-minimum-reclaim']);

interface FlagDef {
  name: string;
  arg?: string;
  bool?: boolean;
  help: string;
  def?: string;
}

const FLAGS: FlagDef[] = [
  { name: 'config', arg: 'FILE', help: 'kubelet configuration file (YAML or JSON KubeletConfiguration); its eviction fields are used' },
  { name: 'eviction-hard', arg: 'MAP', help: 'hard thresholds, e.g. "memory.available<100Mi,nodefs.available<10%"' },
  { name: 'eviction-soft', arg: 'MAP', help: 'soft thresholds, e.g. "memory.available<300Mi"' },
  { name: 'eviction-soft-grace-period', arg: 'MAP', help: 'grace periods of soft thresholds, e.g. "memory.available=1m30s"' },
  { name: 'eviction-max-pod-grace-period', arg: 'SECONDS', help: 'max pod termination grace period for soft evictions' },
  { name: 'eviction-minimum-reclaim', arg: 'MAP', help: 'minimum reclaim per signal, e.g. "memory.available=0Mi"' },
  { name: 'eviction-pressure-transition-period', arg: 'DURATION', help: 'how long a node condition stays after its threshold clears', def: '5m' },
  { name: 'enforce-node-allocatable', arg: 'LIST', help: 'enforce node allocatable levels (pods, system-reserved, kube-reserved)' },
  { name: 'system-reserved-cgroup', arg: 'PATH', help: "the kubelet's; read only because enforcing system-reserved needs it (evictd enforces no allocatable)" },
  { name: 'kube-reserved-cgroup', arg: 'PATH', help: "the kubelet's; read only because enforcing kube-reserved needs it" },
  { name: 'cgroups-per-qos', bool: true, help: "the kubelet's; every --enforce-node-allocatable option but none needs it true", def: 'true' },
  { name: 'memory-high-eviction-threshold', arg: 'RATE', help: 'KEP-5986: memory.events high per second above which a container is under pressure (0: off)' },
  { name: 'memory-max-eviction-threshold', arg: 'RATE', help: 'KEP-5986: memory.events max per second above which a container is near its OOM (0: off)' },
  { name: 'memory-psi-eviction-threshold', arg: 'PERCENT', help: 'KEP-5986: memory.pressure some avg10 above which a container is under pressure (0: off)' },
  {
    name: 'memory-pressure-eviction-grace-period',
    arg: 'DURATION',
    help: 'KEP-5986: how long a pod stays under pressure before its containers are relaxed, then it is evicted',
    def: '0s',
  },
  {
    name: 'feature-gates',
    arg: 'MAP',
    help: "the kubelet's gates, over the file's featureGates; an unset HugepageAwareEviction follows the kubelet release its Node names (off when unknown: set it for a v1.37+ kubelet without API access)",
  },
  { name: 'container-runtime-endpoint', arg: 'ENDPOINT', help: 'CRI endpoint', def: 'unix:///run/containerd/containerd.sock' },
  { name: 'cgroup-root', arg: 'PATH', help: 'the node cgroup; with a memory limit, that limit is the node memory capacity', def: '/' },
  { name: 'pod-cgroup-root', arg: 'PATH', help: 'the pod cgroup root (kubepods) inside the hierarchy', def: '<cgroup-root>/kubepods' },
  { name: 'root-dir', arg: 'DIR', help: 'kubelet root dir: nodefs is the filesystem holding it', def: '/var/lib/kubelet (or / when absent)' },
  { name: 'housekeeping-interval', arg: 'DURATION', help: 'fallback pass interval when no notification arrives', def: '10s' },
  {
    name: 'volume-stats-agg-period',
    arg: 'DURATION',
    help: "how often the pods' emptyDir volumes under the root dir are measured (emptyDir sizeLimit evictions)",
    def: '1m',
  },
  { name: 'dry-run', bool: true, help: 'log decisions, act on nothing' },
  {
    name: 'memory-brake',
    bool: true,
    help: 'on a memory threshold met, hold the top-ranked pod with memory.high just above its usage until it is evicted or the signal recovers (cgroup v2 only; config field memoryBrake)',
    def: 'false',
  },
  { name: 'memory-brake-max-duration', arg: 'DURATION', help: 'a pod braked this long is stopped (config field memoryBrakeMaxDuration)', def: '2m' },
  { name: 'state-dir', arg: 'DIR', help: 'where evictd keeps the record of the brakes it set, to release them after a crash (tmpfs)', def: '/run/evictd' },
  { name: 'fast-kill', bool: true, help: 'for hard memory thresholds, kill the pod processes via its cgroup before StopPodSandbox', def: 'true' },
  {
    name: 'standing-orders',
    bool: true,
    help: 'near a hard memory line, name the pod the kubelet would evict so the line mechanism kills it the moment the line is crossed; the next pass stops its sandbox and reports it (needs a mechanism that holds orders, the eBPF tripwire; off with --fast-kill=false)',
    def: 'true',
  },
  { name: 'release-timeout', arg: 'DURATION', help: 'how long to wait for an evicted pod memory to come back', def: '5s' },
  { name: 'psi-trigger', arg: 'TRIGGER', help: 'PSI trigger on the pod cgroup root, "some|full <stall us> <window us>" or "none"', def: 'some 100000 2000000' },
  {
    name: 'notifications',
    arg: 'MODE',
    help: 'kernel (memory lines on the eBPF tripwire or v1 eventfd, the adaptive poller where missing), poll (memory lines on the adaptive poller, no BPF; PSI and cgroup event files still notify) or none (housekeeping only)',
    def: 'kernel',
  },
  {
    name: 'realtime-priority',
    arg: 'N',
    help: "SCHED_FIFO priority (1-99) for the threads that kill at the line (the standing orders'), so a busy pod cannot delay a kill; the main thread keeps normal scheduling; 0 = normal scheduling for all (needs CAP_SYS_NICE; where the node refuses it, evictd says so and runs at normal priority)",
    def: '0',
  },
  {
    name: 'lock-memory',
    bool: true,
    help: 'lock the files evictd maps at start (node, its libraries, the addon) in RAM once touched (mlock2, MLOCK_ONFAULT), so that near the end of memory its code is not paged out just as it must act (needs CAP_IPC_LOCK; where the node refuses it, evictd says so and runs)',
    def: 'true',
  },
  {
    name: 'reap-killed',
    bool: true,
    help: "after a pod is killed through its cgroup, have the kernel free its tasks' memory at once (process_mrelease, Linux 5.15+) instead of as each dying task gets the CPU to exit; a live task is never touched",
    def: 'true',
  },
  {
    name: 'metrics-address',
    arg: 'HOST:PORT',
    help: 'Prometheus /metrics, and the probes /livez (the loop completes passes) and /readyz (and the runtime answers; /healthz is the same)',
    def: '127.0.0.1:9741',
  },
  {
    name: 'admission-address',
    arg: 'HOST:PORT|unix:PATH',
    help: 'serve POST /admit (the admission decision under the current node conditions); off unless given. A unix socket is created mode 0600; beyond loopback the three TLS flags below are required',
  },
  { name: 'admission-tls-cert-file', arg: 'FILE', help: "/admit over HTTPS: the server's certificate (PEM)" },
  { name: 'admission-tls-private-key-file', arg: 'FILE', help: "/admit over HTTPS: the server's private key (PEM)" },
  { name: 'admission-client-ca-file', arg: 'FILE', help: '/admit over HTTPS: only clients with a certificate signed by this CA (PEM) are served' },
  {
    name: 'record',
    arg: 'FILE',
    help: 'append what each pass saw and decided to FILE, one JSON line per pass and per admission answer (docs/scenarios.md#recordings); `evictd simulate FILE` replays it',
  },
  { name: 'record-max-size', arg: 'QUANTITY', help: 'past this size the recording moves to FILE.1 and FILE starts again', def: '64Mi' },
  { name: 'log-level', arg: 'LEVEL', help: `one of ${LOG_LEVELS.join(', ')}`, def: 'info' },
  { name: 'pod-source', arg: 'SOURCE', help: 'api, kubelet or runtime (runtime: sandboxes only)', def: 'api with --kubeconfig or in a cluster, else runtime' },
  { name: 'kubeconfig', arg: 'FILE', help: 'kubeconfig for the API server (default: in-cluster service account)' },
  { name: 'node-name', arg: 'NAME', help: 'this node name (default $NODE_NAME or the host name)' },
  { name: 'kubelet-url', arg: 'URL', help: 'kubelet endpoint for --pod-source=kubelet', def: 'https://127.0.0.1:10250' },
  { name: 'kubelet-insecure-tls', bool: true, help: "don't verify the kubelet serving certificate" },
  {
    name: 'trust-sandbox-annotations',
    bool: true,
    help: "runtime-only pod specs read priority and requests from the sandbox's evictd.io/priority, evictd.io/requests and evictd.io/limits annotations; a pod's author writes them, so only for labs and nodes where every author is trusted",
  },
  { name: 'help', bool: true, help: 'show this help' },
];

/** --help's sections, in order: every flag in exactly one (a unit test holds it). */
export const FLAG_GROUPS: readonly { title: string; flags: readonly string[] }[] = [
  {
    title: "Eviction policy (the kubelet's flags and configuration file)",
    flags: [
      'config',
      'eviction-hard',
      'eviction-soft',
      'eviction-soft-grace-period',
      'eviction-max-pod-grace-period',
      'eviction-minimum-reclaim',
      'eviction-pressure-transition-period',
      'enforce-node-allocatable',
      'system-reserved-cgroup',
      'kube-reserved-cgroup',
      'cgroups-per-qos',
      'feature-gates',
      'memory-high-eviction-threshold',
      'memory-max-eviction-threshold',
      'memory-psi-eviction-threshold',
      'memory-pressure-eviction-grace-period',
    ],
  },
  {
    title: 'The node and its runtime',
    flags: ['container-runtime-endpoint', 'cgroup-root', 'pod-cgroup-root', 'root-dir', 'housekeeping-interval', 'volume-stats-agg-period', 'state-dir'],
  },
  { title: 'How it acts', flags: ['dry-run', 'fast-kill', 'standing-orders', 'release-timeout', 'memory-brake', 'memory-brake-max-duration'] },
  { title: 'Kernel notifications and the kill path', flags: ['notifications', 'psi-trigger', 'realtime-priority', 'lock-memory', 'reap-killed'] },
  { title: 'Pod specs (Kubernetes)', flags: ['pod-source', 'kubeconfig', 'node-name', 'kubelet-url', 'kubelet-insecure-tls', 'trust-sandbox-annotations'] },
  {
    title: 'Endpoints',
    flags: ['metrics-address', 'admission-address', 'admission-tls-cert-file', 'admission-tls-private-key-file', 'admission-client-ca-file'],
  },
  { title: 'Records and logs', flags: ['record', 'record-max-size', 'log-level', 'help'] },
];

const HELP_WIDTH = 100;
const HELP_INDENT = '        ';

/** Words joined into lines of at most `width` characters, each after `indent`. */
function wrap(text: string, indent: string, width: number): string[] {
  const out: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/)) {
    if (line && indent.length + line.length + 1 + word.length > width) {
      out.push(indent + line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) out.push(indent + line);
  return out;
}

export function runUsage(): string {
  const lines = ['usage: evictd run [flags]', '', 'The eviction agent: kubelet eviction rules, woken by kernel notifications.'];
  for (const g of FLAG_GROUPS) {
    lines.push('', `${g.title}:`);
    for (const name of g.flags) {
      const f = FLAGS.find((x) => x.name === name)!;
      lines.push(`  --${f.name}${f.arg ? ` ${f.arg}` : ''}`, ...wrap(`${f.help}${f.def ? ` (default ${f.def})` : ''}`, HELP_INDENT, HELP_WIDTH));
    }
  }
  return lines.join('\n');
}

/** Every flag's name, for the test that each is in one section. */
export const FLAG_NAMES: readonly string[] = FLAGS.map((f) => f.name);

export type ParsedFlags = Record<string, string | boolean>;

/** --flag value, --flag=value, --bool, --bool=true|false; unknown flags are usage errors. */
export function parseFlags(argv: string[]): ParsedFlags {
  const out: ParsedFlags = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === '-h') {
      out.help = true;
      continue;
    }
    const m = /^--?([a-z][a-z0-9-]*)(?:=(.*))?$/s.exec(a);
    if (!m) throw new UsageError(`run: unexpected argument ${JSON.stringify(a)} (flags start with --)`);
    const def = FLAGS.find((f) => f.name === m[1]);
    if (!def) {
      const near = closest(
        m[1]!,
        FLAGS.map((f) => f.name),
      );
      throw new UsageError(`run: unknown flag --${m[1]}${near ? ` (did you mean --${near}?)` : ''} (see evictd run --help)`);
    }
    if (def.bool) {
      const v = m[2];
      if (v === undefined || v === 'true') out[def.name] = true;
      else if (v === 'false') out[def.name] = false;
      else throw badValue(`--${def.name}`, v, 'must be true or false');
      continue;
    }
    let v = m[2];
    if (v === undefined) {
      if (i + 1 >= argv.length) throw new UsageError(`--${def.name}: needs a value (${def.arg})`);
      v = argv[++i]!;
    }
    const before = out[def.name];
    out[def.name] = MAP_FLAGS.has(def.name) && typeof before === 'string' ? `${before},${v}` : v;
  }
  return out;
}

/**
 * The known name nearest to a mistyped one, when it is near enough to be the one meant: at most
 * a third of its letters apart (edits: insert, delete, replace, swap two neighbours), or the
 * only name it is a prefix of. null otherwise: a suggestion that is a guess helps nobody.
 */
export function closest(typed: string, names: readonly string[]): string | null {
  const prefixed = names.filter((n) => n.startsWith(typed));
  if (typed.length >= 3 && prefixed.length === 1) return prefixed[0]!;
  let best: string | null = null;
  let bestD = Infinity;
  for (const n of names) {
    const d = editDistance(typed, n);
    if (d < bestD) [best, bestD] = [n, d];
  }
  return best !== null && bestD <= Math.max(1, Math.floor(typed.length / 3)) ? best : null;
}

/** Optimal string alignment distance (Damerau-Levenshtein without repeated edits of a substring). */
function editDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i]![j] = Math.min(d[i - 1]![j]! + 1, d[i]![j - 1]! + 1, d[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i]![j] = Math.min(d[i]![j]!, d[i - 2]![j - 2]! + 1);
    }
  }
  return d[a.length]![b.length]!;
}
