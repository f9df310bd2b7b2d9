/**
 * What if: a recording's history run again under another config, and the two compared.
 *
 * The recorded history is what the live config let happen, so the hypothetical run changes it
 * where it can and says where it cannot:
 * - a pod the hypothetical config evicts is gone from every later pass, and its memory (the
 *   working set the recording gives it at each later pass) is counted back into
 *   memory.available and allocatableMemory.available; disk and PIDs are not given back;
 * - a memory line the recorded passes jump over is taken as crossed where the signal, drawn
 *   straight between the two passes around it, meets it: a pass is made there, as a real
 *   agent woken by that line would run, from the later pass's pods with their memory drawn the
 *   same way;
 * - a standing order's kill recorded at the live line's crossing is a point of the history too
 *   (the signal there, the victim's memory grown by what the node lost since the pass before);
 *   the pass that confirmed it read the memory still coming back and is not decided on;
 * - past a live eviction the recording knows nothing of that pod: when the hypothetical config
 *   has not evicted it by then, its ramp is carried on at its recorded rate, and the OOM killer
 *   is taken to end it first when the hypothetical line leaves less time before memory runs out
 *   (available reaching 0) than the agent took to react to that ramp live;
 * - a recorded admission answer is decided under each run's conditions at its time: the answers
 *   the two runs give differently are said.
 * Pure: no I/O, no clock.
 */
import { decideActions } from '../policy/actions';
import { admit, type AdmissionResult } from '../policy/admission';
import type { PolicyConfig } from '../policy/config';
import { formatDuration, parseDuration } from '../policy/duration';
import { assess, initialState, planEvictions } from '../policy/evaluate';
import { decideOrders, isHard } from '../policy/standing-order';
import { thresholdAmount } from '../policy/thresholds';
import type { ActivePod, MemoryStats, NodeCondition, NodeStats } from '../policy/types';
import type { RecordedAnswer, Recording } from './recording-reader';
import { answerText } from './replay';

const MiB = 1024 * 1024;
const key = (p: ActivePod): string => `${p.spec.namespace}/${p.spec.name}`;
const memOf = (p: ActivePod): number => (p.usage?.containers ?? []).reduce((n, c) => n + (c.memoryBytes ?? 0), 0);

/** One point of the history: a recorded pass, a recorded crossing, or a crossing drawn between two. */
interface Sample {
  atNs: number;
  node: NodeStats;
  pods: ActivePod[];
  kind: 'pass' | 'crossing' | 'drawn';
  /** the recorded pass it is (or comes before) */
  pass: number;
}

function withMemory(p: ActivePod, bytes: number): ActivePod {
  const containers = p.usage?.containers ?? [];
  const first = containers.findIndex((c) => c.memoryBytes !== undefined);
  if (first < 0) return p;
  const others = containers.reduce((n, c, i) => n + (i === first ? 0 : (c.memoryBytes ?? 0)), 0);
  return {
    spec: p.spec,
    usage: { ...p.usage!, containers: containers.map((c, i) => (i === first ? { ...c, memoryBytes: Math.max(0, Math.round(bytes - others)) } : c)) },
  };
}

const shift = (m: MemoryStats | undefined, freed: number): MemoryStats | undefined =>
  m ? { availableBytes: m.availableBytes + freed, workingSetBytes: Math.max(0, m.workingSetBytes - freed) } : undefined;

/** The node with `freed` bytes of working set given back to both memory signals. */
function giveBack(node: NodeStats, freed: number): NodeStats {
  if (freed === 0) return node;
  const out: NodeStats = { ...node };
  if (node.memory) out.memory = shift(node.memory, freed);
  if (node.allocatableMemory) out.allocatableMemory = shift(node.allocatableMemory, freed);
  return out;
}

/** The recorded history as points: each pass, with each standing order's crossing before the pass that confirmed it. */
function history(rec: Recording): Sample[] {
  const out: Sample[] = [];
  // A kill is confirmed again by every pass until its stop is done: one crossing, the first.
  const crossings = new Set<string>();
  rec.scenario.steps.forEach((step, i) => {
    const prev = out[out.length - 1];
    for (const c of rec.passes[i]!.confirmed) {
      if (!prev || c.crossedAt === undefined || !prev.node.memory) continue;
      const id = `${c.pod}@${c.crossedAt}`;
      if (crossings.has(id)) continue;
      crossings.add(id);
      const at = parseDuration(c.crossedAt);
      const lost = prev.node.memory.availableBytes - c.availableBytes;
      if (lost <= 0) continue;
      const node = {
        ...prev.node,
        memory: { availableBytes: c.availableBytes, workingSetBytes: prev.node.memory.workingSetBytes + lost },
        ...(prev.node.allocatableMemory ? { allocatableMemory: shift(prev.node.allocatableMemory, -lost)! } : {}),
      };
      out.push({ atNs: at, node, pods: prev.pods.map((p) => (key(p) === c.pod ? withMemory(p, memOf(p) + lost) : p)), kind: 'crossing', pass: i + 1 });
    }
    out.push({ atNs: step.at, node: step.node, pods: step.pods, kind: 'pass', pass: i + 1 });
  });
  return out;
}

/** The hypothetical memory lines (bytes) on a node's numbers, hard and soft. */
function memoryLines(config: PolicyConfig, node: NodeStats): { signal: 'memory' | 'allocatableMemory'; bytes: number }[] {
  const out: { signal: 'memory' | 'allocatableMemory'; bytes: number }[] = [];
  for (const t of config.thresholds) {
    const part = t.signal === 'memory.available' ? 'memory' : t.signal === 'allocatableMemory.available' ? 'allocatableMemory' : null;
    const m = part ? node[part] : undefined;
    if (part && m) out.push({ signal: part, bytes: thresholdAmount(t.value, m.availableBytes + m.workingSetBytes) });
  }
  return out;
}

/** Where, between two points, the signal drawn straight between them first meets one of the lines; null if it does not. */
function drawnCrossing(config: PolicyConfig, a: Sample, b: Sample): Sample | null {
  let f = Infinity;
  for (const line of memoryLines(config, b.node)) {
    const x = a.node[line.signal]?.availableBytes;
    const y = b.node[line.signal]?.availableBytes;
    if (x === undefined || y === undefined || !(x >= line.bytes && y < line.bytes)) continue;
    // just past the line (available one byte below it): at the line itself it is not met
    f = Math.min(f, (x - line.bytes + 1) / (x - y));
  }
  if (f === Infinity) return null;
  const lerp = (x: number, y: number) => Math.round(x + (y - x) * f);
  const node: NodeStats = { ...b.node };
  for (const part of ['memory', 'allocatableMemory'] as const) {
    const x = a.node[part];
    const y = b.node[part];
    if (x && y) node[part] = { availableBytes: lerp(x.availableBytes, y.availableBytes), workingSetBytes: lerp(x.workingSetBytes, y.workingSetBytes) };
  }
  const before = new Map(a.pods.map((p) => [key(p), memOf(p)]));
  const pods = b.pods.map((p) => withMemory(p, lerp(before.get(key(p)) ?? 0, memOf(p))));
  return { atNs: lerp(a.atNs, b.atNs), node, pods, kind: 'drawn', pass: b.pass };
}

export interface RunEviction {
  pod: string;
  signal: string;
  atNs: number;
  /** the threshold that cost it, as configured (signal, kind, quantity) */
  threshold: string;
  kind: Sample['kind'];
}

interface Run {
  evictions: RunEviction[];
  /** when each condition was first reported */
  conditions: Partial<Record<NodeCondition, number>>;
  /** per point: the node's memory.available in this run (pods it evicted given back) */
  available: Map<Sample, number | undefined>;
  /** the pods a standing order named at the last pass before each point, per run */
  ordered: Map<Sample, Set<string>>;
  /** each decided point's conditions, in time order: what admission answered on */
  held: { atNs: number; conditions: readonly NodeCondition[] }[];
}

/** The config over the history, evicted pods taken out as it goes. */
function runOver(config: PolicyConfig, rec: Recording, samples: Sample[]): Run {
  let state = initialState();
  const removed = new Set<string>();
  const run: Run = { evictions: [], conditions: {}, available: new Map(), ordered: new Map(), held: [] };
  let ordered = new Set<string>();
  let prev: Sample | null = null;
  const adjust = (s: Sample): Sample => {
    const freed = s.pods.filter((p) => removed.has(key(p))).reduce((n, p) => n + memOf(p), 0);
    return { ...s, node: giveBack(s.node, freed), pods: s.pods.filter((p) => !removed.has(key(p))) };
  };
  for (const raw of samples) {
    const cur = adjust(raw);
    // A pass that confirmed a standing order's kill read the node while the pod's memory was
    // still coming back, and the live agent acted on nothing else in it: neither does a run.
    if (raw.kind === 'pass' && rec.passes[raw.pass - 1]!.confirmed.length > 0) {
      run.available.set(raw, cur.node.memory?.availableBytes);
      run.ordered.set(raw, ordered);
      continue;
    }
    const drawn = prev ? drawnCrossing(config, prev, cur) : null;
    // A drawn point's pods come from `cur`, already without the removed ones.
    // the layout the live pass observed (a drawn point lies before that pass)
    const layout = rec.passes[raw.pass - 1]!.layout;
    // `cur` again after the drawn point: what that point evicted is given back at `cur` too.
    for (const point of drawn ? [drawn, null] : [cur]) {
      const s = point ?? adjust(raw);
      const assessed = assess(config, state, { now: s.atNs, node: s.node, layout });
      const ev = planEvictions(config, assessed, s.pods, layout);
      state = ev.state;
      for (const c of ev.conditions) run.conditions[c] ??= s.atNs;
      run.held.push({ atNs: s.atNs, conditions: ev.conditions });
      for (const a of decideActions(config, assessed, ev)) {
        const take = a.type === 'evict-all' ? a.evictions : a.type === 'evict-one' && a.candidates[0] ? [a.candidates[0]] : [];
        for (const e of take) {
          const k = `${e.pod.namespace}/${e.pod.name}`;
          if (removed.has(k)) continue;
          removed.add(k);
          const t = a.type === 'evict-one' ? a.threshold : null;
          run.evictions.push({ pod: k, signal: e.signal, atNs: s.atNs, threshold: t ? `${t.signal}<${t.quantity} (${t.kind})` : e.signal, kind: s.kind });
        }
      }
      if (s.kind === 'pass' && rec.header.standingOrders) {
        ordered = new Set(
          decideOrders(
            config,
            assessed.obs,
            s.pods.map((p) => ({ pod: p, cgroupDir: '-' })),
            layout,
          ).flatMap((d) => (d.order ? [`${d.order.pod.namespace}/${d.order.pod.name}`] : [])),
        );
      }
    }
    run.available.set(raw, cur.node.memory?.availableBytes);
    run.ordered.set(raw, ordered);
    prev = adjust(raw);
  }
  return run;
}

export type Change = 'earlier' | 'later' | 'same' | 'not at all' | 'new';

export interface EvictionChange {
  pod: string;
  change: Change;
  recorded?: { at: string; signal: string };
  whatIf?: { at: string; signal: string; threshold: string; drawn?: true };
  /** whatIf minus recorded, ms (negative: earlier) */
  byMs?: number;
}

export interface ConditionChange {
  condition: NodeCondition;
  change: Change;
  recorded?: string;
  whatIf?: string;
  byMs?: number;
}

/** A live eviction the hypothetical config had not made when the recording lost the pod. */
export interface Ramp {
  pod: string;
  rateMiBs: number;
  /** memory.available at the last point the recording has the pod, MiB */
  availableMiB: number;
  /** the hypothetical memory line, MiB (null: none) */
  lineMiB: number | null;
  /** time from the line's crossing to memory running out, ms */
  marginMs: number | null;
  /** what the agent took to act on this ramp live (a standing order's kill, or a pass), ms; and how the hypothetical one would */
  reactionMs: number;
  by: 'standing order' | 'pass';
  oomFirst: boolean;
}

/** A recorded admission answer the hypothetical config would give otherwise. */
export interface AnswerChange {
  pod: string;
  at: string;
  /** the answer under the recorded config's run, and under the hypothetical one's (each with its conditions) */
  recorded: string;
  whatIf: string;
}

export interface WhatIfResult {
  evictions: EvictionChange[];
  conditions: ConditionChange[];
  /** the recorded admission answers that change (none when the recording has none) */
  admissions: AnswerChange[];
  /** per hypothetical threshold, the pods it would have evicted */
  cost: { threshold: string; pods: string[] }[];
  ramps: Ramp[];
}

const ms = (ns: number) => Math.round(ns / 1e4) / 100;
const change = (a: number | undefined, b: number | undefined): Change =>
  a === undefined ? 'new' : b === undefined ? 'not at all' : b < a ? 'earlier' : b > a ? 'later' : 'same';

export function whatIf(rec: Recording, hypothetical: PolicyConfig): WhatIfResult {
  const samples = history(rec);
  const live = runOver(rec.scenario.config, rec, samples);
  const hyp = runOver(hypothetical, rec, samples);
  const pods = [...new Set([...live.evictions, ...hyp.evictions].map((e) => e.pod))];
  const evictions = pods.map((pod): EvictionChange => {
    const a = live.evictions.find((e) => e.pod === pod);
    const b = hyp.evictions.find((e) => e.pod === pod);
    const out: EvictionChange = { pod, change: change(a?.atNs, b?.atNs) };
    if (a) out.recorded = { at: formatDuration(a.atNs), signal: a.signal };
    if (b) out.whatIf = { at: formatDuration(b.atNs), signal: b.signal, threshold: b.threshold, ...(b.kind === 'drawn' ? { drawn: true as const } : {}) };
    if (a && b) out.byMs = ms(b.atNs - a.atNs);
    return out;
  });
  const conditions = (['MemoryPressure', 'DiskPressure', 'PIDPressure'] as const).flatMap((c): ConditionChange[] => {
    const a = live.conditions[c];
    const b = hyp.conditions[c];
    if (a === undefined && b === undefined) return [];
    return [
      {
        condition: c,
        change: change(a, b),
        ...(a !== undefined ? { recorded: formatDuration(a) } : {}),
        ...(b !== undefined ? { whatIf: formatDuration(b) } : {}),
        ...(a !== undefined && b !== undefined ? { byMs: ms(b - a) } : {}),
      },
    ];
  });
  const cost = new Map<string, string[]>();
  for (const e of hyp.evictions) cost.set(e.threshold, [...(cost.get(e.threshold) ?? []), e.pod]);
  const ramps: Ramp[] = [];
  for (const e of evictions) {
    if (!e.recorded || (e.change !== 'not at all' && e.change !== 'later')) continue;
    const r = ramp(rec, samples, hyp, hypothetical, e.pod);
    if (r) ramps.push(r);
  }
  return { evictions, conditions, admissions: answerChanges(rec, live, hyp), cost: [...cost].map(([threshold, p]) => ({ threshold, pods: p })), ramps };
}

/** A run's conditions at a time: its last decided point's at or before it (before any: none, as the run starts). */
function conditionsAt(run: Run, atNs: number): readonly NodeCondition[] {
  let out: readonly NodeCondition[] = [];
  for (const h of run.held) {
    if (h.atNs > atNs) break;
    out = h.conditions;
  }
  return out;
}

/**
 * Each recorded answer under both runs (the recorded config's too, as the evictions are
 * compared: both through the same treatment of the history); those whose answer differs (not
 * only the conditions: an admitted Burstable pod is admitted either way).
 */
function answerChanges(rec: Recording, live: Run, hyp: Run): AnswerChange[] {
  return rec.admissions.flatMap((a): AnswerChange[] => {
    const was = answerIn(live, a);
    const would = answerIn(hyp, a);
    if (was.d.admit === would.d.admit && was.d.reason === would.d.reason) return [];
    return [{ pod: `${a.pod.namespace}/${a.pod.name}`, at: a.at, recorded: answerText(was.d, was.c), whatIf: answerText(would.d, would.c) }];
  });
}

/** A recorded answer decided again under a run's conditions at its time. */
function answerIn(run: Run, a: RecordedAnswer): { d: AdmissionResult; c: readonly NodeCondition[] } {
  const c = conditionsAt(run, a.atNs);
  return { d: admit(a.pod, c), c };
}

/** The pod's ramp up to its live eviction, carried on under the hypothetical line. */
function ramp(rec: Recording, samples: Sample[], hyp: Run, config: PolicyConfig, pod: string): Ramp | null {
  // Every point that has the pod: the recording loses it at its live eviction.
  const seen = samples.filter((s) => s.pods.some((p) => key(p) === pod));
  const last = seen[seen.length - 1];
  if (!last) return null;
  const use = (s: Sample) => memOf(s.pods.find((p) => key(p) === pod)!);
  const before = [...seen].reverse().find((s) => s.atNs < last.atNs && use(s) < use(last));
  if (!before) return null;
  const rate = (use(last) - use(before)) / ((last.atNs - before.atNs) / 1e9);
  const available = hyp.available.get(last) ?? last.node.memory?.availableBytes ?? 0;
  const cap = last.node.memory ? last.node.memory.availableBytes + last.node.memory.workingSetBytes : 0;
  // The highest memory.available line that would act at once: hard, or soft with no grace.
  const lines = config.thresholds
    .filter((t) => t.signal === 'memory.available')
    .map((t) => ({ bytes: thresholdAmount(t.value, cap), graceMs: isHard(t) ? 0 : t.gracePeriodNs / 1e6 }));
  const line = lines.sort((a, b) => b.bytes - a.bytes)[0] ?? null;
  // How fast the agent acted on this ramp live: a standing order's kill (crossing -> kill), or
  // the pass that evicted it (its wake-up -> decision). The hypothetical agent acts as fast only
  // if a pass before the crossing had placed an order on its own line naming this pod.
  const pass = rec.passes[last.pass - 1];
  const conf = rec.passes.flatMap((p) => p.confirmed).find((c) => c.pod === pod && c.crossedAt && c.killedAt);
  const orderMs = conf ? (parseDuration(conf.killedAt!) - parseDuration(conf.crossedAt!)) / 1e6 : 0.1;
  const evicting = rec.passes.find((p) => p.decided.actions.some((a) => a.includes(` ${pod} `)));
  const passMs = evicting ? (evicting.ms.wake ?? 0) + evicting.ms.decide : (pass?.ms.decide ?? 0);
  const standing = hyp.ordered.get(last)?.has(pod) === true;
  const reactionMs = Math.round((standing ? orderMs : passMs) * 1000) / 1000;
  const marginMs = line ? (line.bytes / rate) * 1000 : null;
  return {
    pod,
    rateMiBs: Math.round(rate / MiB),
    availableMiB: Math.round((available / MiB) * 10) / 10,
    lineMiB: line ? Math.round((line.bytes / MiB) * 1000) / 1000 : null,
    marginMs: marginMs === null ? null : Math.round(marginMs * 1000) / 1000,
    reactionMs,
    by: standing ? 'standing order' : 'pass',
    oomFirst: line === null || marginMs! < reactionMs + line.graceMs,
  };
}
