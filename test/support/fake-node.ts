/**
 * A fake node for the agent's table tests (test/unit/pass-table.test.ts,
 * test/unit/actuator-table.test.ts): pods with a memory working set, a runtime whose stops
 * succeed, fail, or fail after freeing the memory, cgroup files that record every write, and a
 * clock that moves only when something sleeps. Every port the agent's pass and actions use
 * (CgroupPort, RuntimePort, PodSpecSource, the observer, Clock) is answered from one state, so a
 * test can say "the stop failed but the memory came back" in one line, without root, cgroupfs or
 * a runtime. The real parts are proven in test/agent/.
 */
import pino, { type Logger } from 'pino';
import type { Clock, PodSpecSource, RuntimePod, RuntimePort, StopTimings, Timer } from '../../src/agent/ports';
import type { CgroupPort, KillResult } from '../../src/node/cgroup-port';
import type { MemoryReading } from '../../src/node/memory';
import type { NodeReading, ObservedPodCgroup } from '../../src/node/observer';
import { Quantity } from '../../src/policy/quantity';
import type { NodeReclaimFunction, PodSpec } from '../../src/policy/types';

export const MiB = 2 ** 20;

/**
 * How a pod's stop goes: done, refused with its memory kept, refused after the memory came back,
 * or under way until the test ends it (finishStop: a SIGTERM handler taking its grace period).
 */
export type StopOutcome = 'ok' | 'fail' | 'fail-freed' | 'held';

export interface FakePodInit {
  name: string;
  workingSetMi: number;
  requestMi?: number;
  priority?: number;
  stop?: StopOutcome;
  /** memory.high of its cgroup, as the kernel prints it */
  memoryHigh?: string;
}

interface FakePod {
  spec: PodSpec;
  workingSetBytes: number;
  stop: StopOutcome;
  memoryHigh: string;
  /** its sandbox runs (the runtime lists it) */
  ready: boolean;
  /** its cgroup exists */
  cgroup: boolean;
  /** it has live processes */
  processes: boolean;
}

/** What settles after a timer fires: the promise jobs it started, and the immediates they queued. */
const aTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * A clock that moves only when the test moves it, as the kubelet's tests step a fake clock.
 * `sleep(ms)` moves it at once (what a pass waits on is never what such a test asks); a timer
 * set with `after` fires only when `step` reaches its time, in time order (then in the order
 * set), each followed by a turn of the event loop so that what it started runs before the next.
 */
export class FakeClock implements Clock {
  ns = 1_000_000_000n;
  private timers: { at: bigint; seq: number; fn: () => void; live: boolean }[] = [];
  private seq = 0;
  now(): bigint {
    return this.ns;
  }
  sleep(ms: number): Promise<void> {
    this.advance(ms);
    return Promise.resolve();
  }
  /** Moves the clock without firing anything (a timer passed over fires at the next step). */
  advance(ms: number): void {
    this.ns += BigInt(Math.round(ms * 1e6));
  }
  after(ms: number, fn: () => void): Timer {
    const t = { at: this.ns + BigInt(Math.round(Math.max(0, ms) * 1e6)), seq: this.seq++, fn, live: true };
    this.timers.push(t);
    return { cancel: () => void (t.live = false) };
  }
  /** The timers set and not yet fired or cancelled: ms from now, soonest first. */
  pending(): number[] {
    return this.timers
      .filter((t) => t.live)
      .map((t) => Number(t.at - this.ns) / 1e6)
      .sort((a, b) => a - b);
  }
  /** Moves the clock `ms` on, firing every timer due on the way at its own time. */
  async step(ms: number): Promise<void> {
    const end = this.ns + BigInt(Math.round(ms * 1e6));
    for (;;) {
      const due = this.timers.filter((t) => t.live && t.at <= end).sort((a, b) => (a.at === b.at ? a.seq - b.seq : a.at < b.at ? -1 : 1))[0];
      if (!due) break;
      due.live = false;
      if (due.at > this.ns) this.ns = due.at;
      due.fn();
      await aTurn();
    }
    this.timers = this.timers.filter((t) => t.live);
    if (end > this.ns) this.ns = end;
    await aTurn();
  }
}

export class FakeNode {
  readonly clock = new FakeClock();
  readonly pods = new Map<string, FakePod>();
  /** every StopPodSandbox: [pod name, grace period] */
  readonly stops: [string, number][] = [];
  /** every cgroup.kill: pod name */
  readonly kills: string[] = [];
  /** every cgroup file write: [pod name, file, text] */
  readonly writes: [string, string, string][] = [];
  readonly reclaims: NodeReclaimFunction[] = [];
  private readonly held = new Map<string, () => void>();
  /** what node-level reclaim frees, per call */
  reclaimFreesBytes = 0;
  /** node memory outside the pods (system, page cache), and the node's capacity */
  otherBytes = 0;
  /** the runtime does not answer: every listing fails (as containerd down) */
  runtimeDown = false;
  capacityBytes: number;
  readonly lines: Record<string, unknown>[] = [];
  readonly logger: Logger;

  constructor(capacityMi: number, pods: FakePodInit[]) {
    this.capacityBytes = capacityMi * MiB;
    for (const p of pods) this.add(p);
    this.logger = pino({ level: 'debug' }, { write: (s: string) => this.lines.push(JSON.parse(s) as Record<string, unknown>) });
  }

  add(p: FakePodInit): void {
    const uid = `uid-${p.name}`;
    const spec: PodSpec = {
      namespace: 'ns',
      name: p.name,
      uid,
      priority: p.priority ?? 0,
      annotations: {},
      volumes: [],
      containers: [{ name: 'c', requests: p.requestMi ? { memory: Quantity.fromNumber(p.requestMi * MiB, 'BinarySI') } : {}, limits: {} }],
    };
    this.pods.set(uid, {
      spec,
      workingSetBytes: p.workingSetMi * MiB,
      stop: p.stop ?? 'ok',
      memoryHigh: p.memoryHigh ?? 'max',
      ready: true,
      cgroup: true,
      processes: true,
    });
  }

  /** Ends a held stop: the pod's handler is done, its memory back, its sandbox stopped. */
  finishStop(name: string): void {
    const end = this.held.get(name);
    if (!end) throw new Error(`no stop of ${name} is held`);
    this.held.delete(name);
    end();
  }

  pod(name: string): FakePod {
    return this.pods.get(`uid-${name}`)!;
  }

  /** log lines with this message */
  logged(msg: string): Record<string, unknown>[] {
    return this.lines.filter((l) => l.msg === msg);
  }

  availableBytes(): number {
    let used = this.otherBytes;
    for (const p of this.pods.values()) if (p.cgroup) used += p.workingSetBytes;
    return this.capacityBytes - used;
  }

  private byDir(dir: string): FakePod | undefined {
    return [...this.pods.values()].find((p) => dir === `/fake/ns/pod${p.spec.uid}`);
  }

  private release(p: FakePod): void {
    p.workingSetBytes = 0;
    p.processes = false;
  }

  readonly cgroups: CgroupPort = {
    memoryVersion: 2,
    memoryDir: (podPath) => `/fake${podPath}`,
    killDir: (podPath) => `/fake${podPath}`,
    read: (dir, file) => {
      const p = this.byDir(dir);
      if (!p?.cgroup) return null;
      if (file === 'memory.high') return `${p.memoryHigh}\n`;
      if (file === 'memory.current') return `${p.workingSetBytes}\n`;
      return null;
    },
    write: (dir, file, text) => {
      const p = this.byDir(dir);
      if (!p?.cgroup) throw Object.assign(new Error(`ENOENT: ${dir}/${file}`), { code: 'ENOENT' });
      this.writes.push([p.spec.name, file, text]);
      if (file === 'memory.high') p.memoryHigh = text.trim();
    },
    exists: (dir) => this.byDir(dir)?.cgroup ?? false,
    pids: (dir) => (this.byDir(dir)?.processes ? [4242] : []),
    // The runtime's SIGTERM is queued from the pod's stop on (this fake delivers nothing).
    sigtermPending: (dir) => {
      const p = this.byDir(dir);
      return p !== undefined && this.stops.some(([name]) => name === p.spec.name);
    },
    memory: (dir): MemoryReading | null => {
      const p = this.byDir(dir);
      if (!p?.cgroup) return null;
      const ws = p.workingSetBytes;
      return {
        capacityBytes: this.capacityBytes,
        usageBytes: ws,
        inactiveFileBytes: 0,
        workingSetBytes: ws,
        availableBytes: this.capacityBytes - ws,
        limited: false,
      };
    },
    kill: (podPath): KillResult => {
      const p = this.byDir(`/fake${podPath}`)!;
      this.kills.push(p.spec.name);
      this.release(p);
      return { method: 'cgroup.kill', signalled: 0 };
    },
  };

  readonly runtime: RuntimePort = {
    listPods: () =>
      this.runtimeDown
        ? Promise.reject(new Error('rpc error: code = Unavailable'))
        : Promise.resolve([...this.pods.values()].filter((p) => p.ready).map((p) => this.runtimePod(p))),
    stopPod: (pod: RuntimePod, grace: number): Promise<StopTimings> => {
      const p = this.pods.get(pod.uid)!;
      this.stops.push([p.spec.name, grace]);
      if (p.stop === 'fail') return Promise.reject(new Error('rpc error: code = DeadlineExceeded'));
      if (p.stop === 'held') {
        return new Promise<StopTimings>((resolve) =>
          this.held.set(p.spec.name, () => {
            this.release(p);
            p.ready = false;
            resolve({ totalMs: 1 });
          }),
        );
      }
      this.release(p);
      if (p.stop === 'fail-freed') return Promise.reject(new Error('rpc error: code = DeadlineExceeded (sandbox stop)'));
      p.ready = false;
      return Promise.resolve({ totalMs: 1 });
    },
    reclaim: (fn) => {
      this.reclaims.push(fn);
      this.otherBytes -= this.reclaimFreesBytes;
      return Promise.resolve({ freedBytes: this.reclaimFreesBytes });
    },
    imageFsInfo: () => Promise.resolve(undefined),
    close: () => undefined,
  };

  readonly specs: PodSpecSource = { get: (uid) => this.pods.get(uid)?.spec };

  /** NodeObserver's face: the node is the whole machine, the pods under /ns */
  readonly observer = {
    opts: {
      layout: { memoryMount: '/fake', memoryVersion: 2 as const, unifiedMount: null, pidsMount: null, mode: 'v2' as const },
      cgroupRoot: '/',
      podCgroupRoot: '/ns',
      nodefsPath: '/',
    },
    memoryDir: '/fake',
    podRootMemoryDir: '/fake/ns',
    observeMemory: () => {
      const o = this.observer.observe();
      return { memory: o.memory, allocatable: o.allocatable };
    },
    observe: (): NodeReading => {
      const pods = new Map<string, ObservedPodCgroup>();
      for (const p of this.pods.values()) {
        if (!p.cgroup) continue;
        const ws = p.workingSetBytes;
        pods.set(p.spec.uid, {
          uid: p.spec.uid,
          qos: 'Burstable',
          path: `/ns/pod${p.spec.uid}`,
          usage: { memoryWorkingSetBytes: ws, memoryUsageBytes: ws, processes: p.processes ? 1 : 0 },
        });
      }
      const available = this.availableBytes();
      const memory: MemoryReading = {
        capacityBytes: this.capacityBytes,
        usageBytes: this.capacityBytes - available,
        inactiveFileBytes: 0,
        workingSetBytes: this.capacityBytes - available,
        availableBytes: available,
        limited: false,
      };
      return { node: { memory: { availableBytes: available, workingSetBytes: memory.workingSetBytes } }, layout: 'single', memory, allocatable: null, pods };
    },
  };

  private runtimePod(p: FakePod): RuntimePod {
    return { sandboxId: `sb-${p.spec.name}`, uid: p.spec.uid, name: p.spec.name, namespace: p.spec.namespace, labels: {}, annotations: {}, ready: p.ready };
  }
}
