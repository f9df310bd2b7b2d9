/**
 * Reads a recording (src/sim/recording.ts) back: the header and the passes, as a scenario whose
 * steps carry what the live passes decided, and the admission answers given between them (a
 * recording made before they were recorded has none). A last line without its newline is a write a crash
 * cut: it is left out and said (`cut`), and everything before it replays. Any other bad line is
 * refused with its line number, as a scenario's bad field is.
 */
import { UsageError, badValue } from '../errors';
import type { ActiveBrake } from '../policy/brake';
import type { Threshold } from '../policy/config';
import { isHard, LINE_SIGNALS } from '../policy/standing-order';
import { initialMemoryPressureState, type MemoryPressureState, type RelaxResult } from '../policy/memory-pressure';
import { initialState, type PolicyState } from '../policy/evaluate';
import { thresholdsForLayout } from '../policy/thresholds';
import { SIGNALS, type FilesystemLayout, type NodeCondition, type PodSpec, type Signal, type Toleration } from '../policy/types';
import { readRecordedPressure } from './recorded-pressure';
import { count, list, map, num, ns, numbers, since, strings } from './recording-fields';
import { RECORDING_VERSION, type Decisions, type RecordedConfirmation, type RecordingHeader } from './recording';
import { LAYOUTS, readPodSpec, readScenario, type Scenario } from './scenario';

/** What a live pass had beside its scenario step. */
export interface RecordedPass {
  /** the file's line number (1 is the header) */
  line: number;
  /** the layout the pass observed (the header's unless the line says another) */
  layout: FilesystemLayout;
  wake: Record<string, number>;
  crossed: Threshold[];
  confirmed: RecordedConfirmation[];
  brakes: ActiveBrake[] | null;
  otherUids: string[];
  noCgroup: Set<string>;
  decided: Decisions;
  ms: { wake?: number; decide: number };
  /** KEP-5986 relaxes carried out, with their outcomes (times in ns since the recording's start) */
  relaxed: RelaxResult[];
}

/** An admission answer the live agent gave, between passes. */
export interface RecordedAnswer {
  /** the file's line number */
  line: number;
  /** ns since the recording's start, and as written */
  atNs: number;
  at: string;
  /** how many passes the file has before it */
  afterPasses: number;
  pod: PodSpec;
  conditions: NodeCondition[];
  admit: boolean;
  reason?: string;
}

export interface Recording {
  header: RecordingHeader;
  scenario: Scenario;
  /** one per scenario step */
  passes: RecordedPass[];
  /** in the file's order */
  admissions: RecordedAnswer[];
  /** the policy state the first pass starts from (a later part's header carries it) */
  initial: PolicyState;
  /** KEP-5986's state the first pass starts from (likewise) */
  initialPressure: MemoryPressureState;
  /** the last line was cut (no newline): left out */
  cut: boolean;
}

/** A recording's first line says so: `{"evictdRecording": 1, ...}`. */
export function isRecording(text: string): boolean {
  return /^\s*\{\s*"evictdRecording"\s*:/.test(text);
}

function decisions(field: string, v: unknown): Decisions {
  if (typeof v !== 'object' || v === null) throw badValue(field, v, 'must be a map of met, conditions, actions, orders');
  const d = v as Record<string, unknown>;
  return {
    met: strings(`${field}.met`, d.met),
    conditions: strings(`${field}.conditions`, d.conditions) as NodeCondition[],
    actions: strings(`${field}.actions`, d.actions),
    orders: strings(`${field}.orders`, d.orders),
  };
}

/**
 * A recorded toleration as admit() reads it. Not the scenario's reader, which refuses what the
 * API server would: a live request (a raw POST /admit) may carry any, and was answered on it.
 */
function anyToleration(field: string, v: unknown): Toleration {
  if (typeof v !== 'object' || v === null) throw badValue(field, v, 'must be a map');
  const out: Record<string, string> = {};
  for (const [k, x] of Object.entries(v)) {
    if (!['key', 'operator', 'value', 'effect'].includes(k)) throw badValue(`${field}.${k}`, x, 'not a toleration field');
    if (typeof x !== 'string') throw badValue(`${field}.${k}`, x, 'must be a string');
    out[k] = x;
  }
  return out as Toleration;
}

/** An `{"admission": ...}` line (src/sim/recording.ts, admissionLine). */
function answer(f: string, line: number, afterPasses: number, v: unknown): RecordedAnswer {
  if (typeof v !== 'object' || v === null) throw badValue(`${f}.admission`, v, 'must be a map of at, pod, conditions, admit');
  const a = v as Record<string, unknown>;
  if (typeof a.admit !== 'boolean') throw badValue(`${f}.admission.admit`, a.admit, 'must be true or false');
  if (a.reason !== undefined && typeof a.reason !== 'string') throw badValue(`${f}.admission.reason`, a.reason, 'must be a string');
  const raw = (typeof a.pod === 'object' && a.pod !== null ? a.pod : {}) as Record<string, unknown>;
  const { tolerations, ...rest } = raw;
  const pod = readPodSpec(`${f}.admission.pod`, rest);
  if (tolerations !== undefined) {
    if (!Array.isArray(tolerations)) throw badValue(`${f}.admission.pod.tolerations`, tolerations, 'must be a list');
    pod.tolerations = tolerations.map((t, j) => anyToleration(`${f}.admission.pod.tolerations[${j}]`, t));
  }
  const out: RecordedAnswer = {
    line,
    atNs: ns(`${f}.admission.at`, a.at),
    at: a.at as string,
    afterPasses,
    pod,
    conditions: strings(`${f}.admission.conditions`, a.conditions) as NodeCondition[],
    admit: a.admit,
  };
  if (a.reason !== undefined) out.reason = a.reason as string;
  return out;
}

const CONDITIONS: readonly NodeCondition[] = ['MemoryPressure', 'DiskPressure', 'PIDPressure'];

function condition(field: string, v: unknown): NodeCondition {
  if (!CONDITIONS.includes(v as NodeCondition)) throw badValue(field, v, `must be one of ${CONDITIONS.join(', ')}`);
  return v as NodeCondition;
}

/**
 * A standing order's use a pass confirmed: its line must be a hard threshold of the recording's
 * config on a line signal (`memory.available[0]`: the first threshold on that signal), or the
 * replay would check it against nothing and call it clean.
 */
function confirmation(field: string, v: unknown, thresholds: readonly Threshold[]): RecordedConfirmation {
  const c = map(field, v);
  const m = typeof c.line === 'string' ? /^([a-zA-Z.]+)\[(\d+)\]$/.exec(c.line) : null;
  const onSignal = m ? thresholds.filter((t) => t.signal === m[1]) : [];
  const t = m ? onSignal[Number(m[2])] : undefined;
  if (!t || !(LINE_SIGNALS as readonly string[]).includes(m![1]!) || !isHard(t))
    throw badValue(`${field}.line`, c.line, `must name a hard threshold of the recording's config on ${LINE_SIGNALS.join(' or ')}, e.g. memory.available[0]`);
  if (typeof c.pod !== 'string' || !c.pod.includes('/')) throw badValue(`${field}.pod`, c.pod, 'must be namespace/name');
  const out: RecordedConfirmation = { line: c.line as string, pod: c.pod, availableBytes: num(`${field}.availableBytes`, c.availableBytes) };
  for (const k of ['crossedAt', 'killedAt'] as const) {
    if (c[k] === undefined) continue;
    since(`${field}.${k}`, c[k]);
    out[k] = c[k] as string;
  }
  if (c.reported !== undefined) {
    if (typeof c.reported !== 'boolean') throw badValue(`${field}.reported`, c.reported, 'must be true or false');
    out.reported = c.reported;
  }
  return out;
}

/** A stage-1 relax the pass carried out (recording.ts RecordedRelax). */
function relaxResult(field: string, v: unknown): RelaxResult {
  const r = map(field, v);
  if (typeof r.uid !== 'string' || r.uid === '') throw badValue(`${field}.uid`, r.uid, 'must be a pod uid');
  if (typeof r.container !== 'string' || r.container === '') throw badValue(`${field}.container`, r.container, 'must be a container name');
  if (typeof r.ok !== 'boolean') throw badValue(`${field}.ok`, r.ok, 'must be true or false');
  const out: RelaxResult = { uid: r.uid, container: r.container, ok: r.ok };
  if (r.after !== undefined) {
    const a = map(`${field}.after`, r.after);
    out.after = { atNs: since(`${field}.after.at`, a.at), high: count(`${field}.after.high`, a.high), max: count(`${field}.after.max`, a.max) };
  }
  return out;
}

export function readRecording(text: string): Recording {
  const lines = text.split('\n');
  let cut = false;
  // The file ends with a newline when every write completed; what follows the last one was cut.
  if (lines[lines.length - 1] === '') lines.pop();
  else if (lines.length > 1) {
    lines.pop();
    cut = true;
  }
  const parsed = lines.map((l, i) => {
    let v: unknown;
    try {
      v = JSON.parse(l);
    } catch (e) {
      throw new UsageError(`line ${i + 1}: not a JSON object: ${(e as Error).message}`);
    }
    return map(`line ${i + 1}`, v, 'a JSON object');
  });
  const h = parsed[0] as unknown as RecordingHeader | undefined;
  if (!h || h.evictdRecording !== RECORDING_VERSION)
    throw badValue('line 1.evictdRecording', h?.evictdRecording, `must be ${RECORDING_VERSION} (a recording of another version)`);
  map('line 1.config', h.config);
  if (typeof h.standingOrders !== 'boolean') throw badValue('line 1.standingOrders', h.standingOrders, 'must be true or false');
  if (h.startedAt !== undefined && (typeof h.startedAt !== 'string' || Number.isNaN(Date.parse(h.startedAt))))
    throw badValue('line 1.startedAt', h.startedAt, 'must be a date and time (ISO 8601)');
  // Passes and answers apart, each with its line number (an answer is a line between passes).
  const passLines: Record<string, unknown>[] = [];
  const passLineNumbers: number[] = [];
  const admissions: RecordedAnswer[] = [];
  parsed.slice(1).forEach((l, i) => {
    if ('admission' in l) admissions.push(answer(`line ${i + 2}`, i + 2, passLines.length, l.admission));
    else {
      passLines.push(l);
      passLineNumbers.push(i + 2);
    }
  });
  const stepKeys = ['at', 'node', 'pods'];
  let scenario: Scenario;
  try {
    scenario = readScenario({
      config: h.config,
      filesystems: h.filesystems,
      steps: passLines.map((l) => Object.fromEntries(stepKeys.filter((k) => k in l).map((k) => [k, l[k]]))),
    });
  } catch (e) {
    // A scenario's field path, steps[i], is the recording's i-th pass line.
    if (e instanceof UsageError) throw new UsageError(e.message.replace(/^steps\[(\d+)\]/, (_, i: string) => `line ${passLineNumbers[Number(i)]}`));
    throw e;
  }
  // The period in force, zero included (the config's reader takes a zero one for unset).
  if (h.pressureTransitionPeriod !== undefined)
    scenario.config = { ...scenario.config, pressureTransitionPeriodNs: since('line 1.pressureTransitionPeriod', h.pressureTransitionPeriod) };
  // Threshold indices count among the thresholds of the layout in force where they are written.
  const threshold = (field: string, i: unknown, layout = scenario.layout): Threshold => {
    const all = thresholdsForLayout(scenario.config.thresholds, layout);
    const t = typeof i === 'number' ? all[i] : undefined;
    if (!t) throw badValue(field, i, `must be a threshold index from 0 to ${all.length - 1}`);
    return t;
  };
  const passes = passLines.map((l, i): RecordedPass => {
    const f = `line ${passLineNumbers[i]}`;
    const layout = (l.filesystems === undefined ? scenario.layout : l.filesystems) as FilesystemLayout;
    if (!LAYOUTS.includes(layout)) throw badValue(`${f}.filesystems`, l.filesystems, `must be one of ${LAYOUTS.join(', ')}`);
    const brakes =
      l.brakes === undefined
        ? null
        : list(`${f}.brakes`, l.brakes).map((x, j): ActiveBrake => {
            const b = map(`${f}.brakes[${j}]`, x);
            if (typeof b.uid !== 'string') throw badValue(`${f}.brakes[${j}].uid`, b.uid, 'must be a string');
            if (b.signal !== undefined && !(SIGNALS as readonly string[]).includes(b.signal as string))
              throw badValue(`${f}.brakes[${j}].signal`, b.signal, 'not a signal');
            return { uid: b.uid, since: since(`${f}.brakes[${j}].since`, b.since), ...(b.signal ? { signal: b.signal as Signal } : {}) };
          });
    const ms = map(`${f}.ms`, l.ms === undefined ? { decide: 0 } : l.ms);
    return {
      line: passLineNumbers[i]!,
      layout,
      wake: numbers(`${f}.wake`, l.wake),
      crossed: list(`${f}.crossed`, l.crossed).map((x, j) => threshold(`${f}.crossed[${j}]`, x, layout)),
      confirmed: list(`${f}.confirmed`, l.confirmed).map((x, j) => confirmation(`${f}.confirmed[${j}]`, x, scenario.config.thresholds)),
      brakes,
      otherUids: strings(`${f}.otherUids`, l.otherUids),
      noCgroup: new Set(strings(`${f}.noCgroup`, l.noCgroup)),
      decided: decisions(`${f}.decided`, l.decided),
      ms: { decide: num(`${f}.ms.decide`, ms.decide), ...(ms.wake !== undefined ? { wake: num(`${f}.ms.wake`, ms.wake) } : {}) },
      relaxed: list(`${f}.relaxed`, l.relaxed).map((x, j) => relaxResult(`${f}.relaxed[${j}]`, x)),
    };
  });
  let initial = initialState();
  let initialPressure = initialMemoryPressureState();
  if (h.state !== undefined) {
    const s = map('line 1.state', h.state);
    const pairs = (field: string) =>
      list(field, s[field.slice('line 1.state.'.length)]).map((x, j) => {
        if (!Array.isArray(x) || x.length !== 2) throw badValue(`${field}[${j}]`, x, 'must be a pair');
        return x as [unknown, unknown];
      });
    initial = {
      firstObservedAt: new Map(
        pairs('line 1.state.firstObservedAt').map(([i, at], j) => [
          threshold(`line 1.state.firstObservedAt[${j}]`, i),
          since(`line 1.state.firstObservedAt[${j}]`, at),
        ]),
      ),
      conditionLastObservedAt: new Map(
        pairs('line 1.state.conditionLastObservedAt').map(([c, at], j) => [
          condition(`line 1.state.conditionLastObservedAt[${j}]`, c),
          since(`line 1.state.conditionLastObservedAt[${j}]`, at),
        ]),
      ),
      thresholdsMet: list('line 1.state.thresholdsMet', s.thresholdsMet).map((i, j) => threshold(`line 1.state.thresholdsMet[${j}]`, i)),
      conditions: list('line 1.state.conditions', s.conditions).map((c, j) => condition(`line 1.state.conditions[${j}]`, c)),
    };
    if (s.memoryPressure !== undefined) initialPressure = readRecordedPressure('line 1.state.memoryPressure', s.memoryPressure);
  }
  return { header: h, scenario, passes, admissions, initial, initialPressure, cut };
}
