/**
 * Exact replay: a recording's passes run again through the policy the live agent ran (the same
 * assess, plan, ordered actions and standing-order rule), each on the numbers that pass saw, and
 * compared with what it decided. What the live pass took as given is given here too: the lines
 * a standing order saw crossed, the orders used (the kernel's kills), the brakes in force.
 * Admission answers are decided again too, by the policy's admit() on the conditions the replay
 * had when each was given.
 */
import { afterRelaxes, decideMemoryPressure, initialMemoryPressureState, type MemoryPressureState } from '../policy/memory-pressure';
import { decideActions } from '../policy/actions';
import type { PolicyConfig } from '../policy/config';
import { formatDuration, parseDuration } from '../policy/duration';
import { assess, planEvictions, type PolicyState } from '../policy/evaluate';
import { decideOrders } from '../policy/standing-order';
import { admit, type AdmissionResult } from '../policy/admission';
import { decisionsOf, type Decisions } from './recording';
import type { RecordedAnswer, RecordedPass, Recording } from './recording-reader';
import type { Step } from './scenario';
import type { FilesystemLayout, NodeCondition } from '../policy/types';

export interface Difference {
  /** the pass's number (1 is the first pass) and its time; an admission: the pass whose conditions it was given on (0: none), and its own time */
  pass: number;
  at: string;
  /** the signal the differing decisions name (or the first met threshold's); an admission: its conditions, or - */
  signal: string;
  what: keyof Decisions | 'confirm' | 'admission';
  recorded: string[];
  replayed: string[];
  /** an admission's pod, namespace/name */
  pod?: string;
}

/** An eviction as decided: the pass, its time, the pod and the signal. */
export interface Decided {
  pass: number;
  at: string;
  pod: string;
  signal: string;
  /** evict (a pass's ranking), confirm (a standing order's kill), evict-all (local storage), stop-braked */
  how: string;
}

export interface ReplayResult {
  passes: number;
  /** admission answers decided again */
  admissions: number;
  recorded: Decided[];
  replayed: Decided[];
  differences: Difference[];
}

/**
 * The evictions a pass's actions carry out, in their order, as the actuator runs them: a pass
 * that confirms a standing order's kill ends there (what follows was decided on numbers read
 * while that pod's memory was still coming back). A confirmation already reported (its sandbox
 * stop still running, or tried again) does not end it: the actuator has nothing to do for it.
 */
export function evictionsIn(actions: readonly string[], pass: number, at: string, confirming: boolean): Decided[] {
  const out: Decided[] = [];
  for (const a of confirming ? actions.filter((x) => x.startsWith('confirm ')) : actions) {
    const [how, ...rest] = a.split(' ');
    if (how === 'evict' && rest[0] !== 'none') out.push({ pass, at, pod: rest[0]!, signal: rest[1]!, how });
    else if (how === 'confirm') out.push({ pass, at, pod: rest[0]!, signal: rest[1]!, how });
    else if (how === 'evict-all') for (const e of rest.join(' ').split(',')) out.push({ pass, at, pod: e.split(' ')[0]!, signal: e.split(' ')[1]!, how });
    else if (how === 'stop-braked') for (const p of rest[0]!.split(',')) out.push({ pass, at, pod: p, signal: 'memory-brake', how });
  }
  return out;
}

/** One pass decided again: the policy's decisions on the pass's own numbers and givens. */
export function decidePass(
  config: PolicyConfig,
  state: PolicyState,
  step: Step,
  pass: RecordedPass,
  layout: FilesystemLayout,
  standingOrders: boolean,
  pressureState: MemoryPressureState = initialMemoryPressureState(),
): { decided: Decisions; state: PolicyState; pressureState: MemoryPressureState } {
  const assessed = assess(config, state, { now: step.at, node: step.node, layout, crossed: pass.crossed });
  // KEP-5986 on the recorded per-container signals; the pass's relaxes, as the runtime answered
  // them, are applied after it (replay)
  const pressure = config.memoryPressure
    ? decideMemoryPressure(config.memoryPressure, config.maxPodGracePeriodSeconds, pressureState, step.at, step.pods)
    : undefined;
  const ev = planEvictions(config, assessed, step.pods, layout);
  const brakes = pass.brakes
    ? { now: step.at, layout, pods: step.pods, present: new Set([...step.pods.map((p) => p.spec.uid), ...pass.otherUids]), active: pass.brakes }
    : undefined;
  const actions = decideActions(config, assessed, ev, brakes, [], pressure);
  const orders = standingOrders
    ? decideOrders(
        config,
        assessed.obs,
        step.pods.map((p) => (pass.noCgroup.has(p.spec.uid) ? { pod: p } : { pod: p, cgroupDir: '-' })),
        layout,
      )
    : [];
  const decided = decisionsOf(ev.thresholdsMet, ev.conditions, actions, orders);
  // A used order is the kernel's kill, given to the pass: its confirmation comes first, as live.
  decided.actions = [...pass.confirmed.map((c) => `confirm ${c.pod} ${c.line.replace(/\[\d+\]$/, '')}`), ...decided.actions];
  return { decided, state: ev.state, pressureState: pressure?.state ?? pressureState };
}

const signalOf = (entries: readonly string[]): string | undefined => {
  for (const e of entries) {
    const m = /\b((?:memory|allocatableMemory|nodefs|imagefs|containerfs|pid)\.\w+|\w+fs\.limit)\b/.exec(e);
    if (m) return m[1];
  }
  return undefined;
};

const sameList = (a: readonly string[], b: readonly string[]): boolean => a.length === b.length && a.every((x, i) => x === b[i]);

export function replay(rec: Recording): ReplayResult {
  const { scenario, passes } = rec;
  let state = rec.initial;
  let pressureState = rec.initialPressure;
  const result: ReplayResult = { passes: passes.length, admissions: rec.admissions.length, recorded: [], replayed: [], differences: [] };
  // Each replayed pass's conditions, when it was at and when it had decided: what admission had
  // (before any pass: the part's starting ones).
  const held: HeldConditions[] = [{ pass: 0, atNs: -Infinity, decidedNs: -Infinity, conditions: rec.initial.conditions }];
  // Each line's standing orders as the replay's passes named them (or none), and when each pass
  // had decided: a used order must be one in force at its crossing.
  const named = new Map<string, Naming[]>();
  // A use is checked at the first pass that confirms it: later passes confirm it again until
  // its sandbox stop is done, after orders on the line have moved on.
  const checked = new Set<string>();
  scenario.steps.forEach((step, i) => {
    const pass = passes[i]!;
    const n = i + 1;
    const at = formatDuration(step.at);
    const r = decidePass(scenario.config, state, step, pass, pass.layout, rec.header.standingOrders, pressureState);
    state = r.state;
    // What the runtime made of the pass's relaxes, as the agent applied it: a refused one sends
    // its container to stage 2, a done one starts its rates at the counters read after it.
    pressureState = afterRelaxes(r.pressureState, pass.relaxed);
    const decidedNs = step.at + pass.ms.decide * 1e6;
    held.push({ pass: n, atNs: step.at, decidedNs, conditions: r.decided.conditions });
    const fallback = signalOf(pass.decided.met) ?? '-';
    for (const what of ['met', 'conditions', 'actions', 'orders'] as const) {
      const a = pass.decided[what];
      const b = r.decided[what];
      if (!sameList(a, b)) result.differences.push({ pass: n, at, signal: signalOf([...a, ...b]) ?? fallback, what, recorded: a, replayed: b });
    }
    for (const c of pass.confirmed) {
      const use = `${c.line} ${c.pod} ${c.crossedAt ?? ''}`;
      if (checked.has(use)) continue;
      checked.add(use);
      const want = inForce(named.get(c.line) ?? [], c.crossedAt === undefined ? Infinity : parseDuration(c.crossedAt));
      if (want.length > 0 && !want.includes(c.pod))
        result.differences.push({
          pass: n,
          at,
          signal: c.line.replace(/\[\d+\]$/, ''),
          what: 'confirm',
          recorded: [`order on ${c.line} used on ${c.pod}`],
          replayed: [`order on ${c.line} named ${want.join(' or ')}`],
        });
    }
    const now = new Map(r.decided.orders.map((o) => o.split(' ') as [string, string]));
    for (const line of now.keys()) if (!named.has(line)) named.set(line, []);
    for (const [line, list] of named) list.push({ pod: now.get(line) ?? null, decidedNs });
    // A pod is evicted once: a later pass confirming it again (its stop retried) is not another.
    const once = (list: Decided[], more: Decided[]) => list.push(...more.filter((e) => !list.some((x) => x.pod === e.pod && x.how === e.how)));
    const confirming = pass.confirmed.some((c) => !c.reported);
    once(result.recorded, evictionsIn(pass.decided.actions, n, at, confirming));
    once(result.replayed, evictionsIn(r.decided.actions, n, at, confirming));
  });
  for (const a of rec.admissions) {
    const d = answerDifference(a, conditionsFor(a, held));
    if (d) result.differences.push(d);
  }
  return result;
}

/** What a replayed pass named on a line (null: no order), and when that pass had decided. */
interface Naming {
  pod: string | null;
  decidedNs: number;
}

/**
 * How long after its pass decided an order may still not be in the kernel: the agent places it
 * once the pass's actions are issued, a moment later; a use on its way meanwhile is the old one's.
 */
const PLACEMENT_SLACK_NS = 250e6;

/**
 * The pods a line's order may have named at a crossing: the last pass's that had decided by then,
 * and, within PLACEMENT_SLACK_NS of that decision, the one's before it. A use reaches the loop
 * when it is free, so it can be confirmed after passes that named another pod: the crossing's
 * time, not the confirming pass, says which order it used. Empty: nothing to check against.
 */
export function inForce(namings: readonly Naming[], crossedNs: number): string[] {
  let i = namings.length - 1;
  while (i >= 0 && namings[i]!.decidedNs > crossedNs) i--;
  if (i < 0) return [];
  const from = i > 0 && crossedNs - namings[i]!.decidedNs < PLACEMENT_SLACK_NS ? i - 1 : i;
  return namings.slice(from, i + 1).flatMap((x) => (x.pod === null ? [] : [x.pod]));
}

/** A pass's node conditions in the replay, as admission would have had them. */
interface HeldConditions {
  pass: number;
  atNs: number;
  /** its `at` plus its decision time (recorded): by then its conditions were the agent's */
  decidedNs: number;
  conditions: readonly NodeCondition[];
}

/**
 * The conditions an answer was given on: the last replayed pass's before its time (before any:
 * the part's starting ones, none in a first part). A pass's `at` is read before it decides, and a
 * pass that reads container disk usage waits on the runtime in between: an answer given then had
 * the pass before's. An answer that falls there (before the pass's `at` plus its decision time)
 * and whose recorded conditions are the pass before's, not this one's, is given the pass before's.
 */
function conditionsFor(a: RecordedAnswer, held: readonly HeldConditions[]): HeldConditions {
  let i = held.length - 1;
  while (i > 0 && held[i]!.atNs > a.atNs) i--;
  const last = held[i]!;
  const prior = held[i - 1];
  if (prior && a.atNs < last.decidedNs && !sameList(last.conditions, a.conditions) && sameList(prior.conditions, a.conditions)) return prior;
  return last;
}

/** An answer as one line: admit, or refuse and why, and the conditions it was given on. */
export function answerText(d: Pick<AdmissionResult, 'admit' | 'reason'>, conditions: readonly NodeCondition[]): string {
  return `${d.admit ? 'admit' : `refuse (${d.reason ?? 'no reason'})`} under ${conditions.length ? conditions.join(',') : 'no condition'}`;
}

/** The answer decided again on the replay's conditions: its difference from the recorded one, or null. */
function answerDifference(a: RecordedAnswer, held: HeldConditions): Difference | null {
  const again = admit(a.pod, held.conditions);
  if (again.admit === a.admit && again.reason === a.reason) return null;
  return {
    pass: held.pass,
    at: a.at,
    signal: held.conditions.join(',') || '-',
    what: 'admission',
    pod: `${a.pod.namespace}/${a.pod.name}`,
    recorded: [answerText(a, a.conditions)],
    replayed: [answerText(again, held.conditions)],
  };
}

/** A difference as the one line the CLI prints. */
export function differenceText(d: Difference): string {
  const list = (x: string[]) => (x.length ? x.join('; ') : 'nothing');
  if (d.what === 'admission')
    return `admission (at ${d.at}, ${d.pass ? `after pass ${d.pass}` : 'before any pass'}), ${d.pod}: recorded ${list(d.recorded)}; replayed ${list(d.replayed)}`;
  return `pass ${d.pass} (at ${d.at}), ${d.signal}: ${d.what}: recorded ${list(d.recorded)}; replayed ${list(d.replayed)}`;
}
