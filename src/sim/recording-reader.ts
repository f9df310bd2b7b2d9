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
import { parseDuration } from '../policy/duration';
import { initialState, type PolicyState } from '../policy/evaluate';
import { thresholdsForLayout } from '../policy/thresholds';
import { SIGNALS, type FilesystemLayout, type NodeCondition, type PodSpec, type Signal, type Toleration } from '../policy/types';
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
  /** the last line was cut (no newline): left out */
  cut: boolean;
}

/** A recording's first line says so: `{"evictdRecording": 1, ...}`. */
export function isRecording(text: string): boolean {
  return /^\s*\{\s*"evictdRecording"\s*:/.test(text);
}

const ns = (field: string, v: unknown): number => {
  if (typeof v !== 'string') throw badValue(field, v, 'must be a duration string');
  try {
    return parseDuration(v);
  } catch (e) {
    throw badValue(field, v, (e as Error).message);
  }
};

const strings = (field: string, v: unknown): string[] => {
  if (v === undefined) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) throw badValue(field, v, 'must be a list of strings');
  return v as string[];
};

function decisions(field: string, v: unknown): Decisions {
  if (typeof v !== 'object' || v === null) throw badValue(field, v, 'must be a map of met, conditions, actions, orders');
  const d = v as Record<string, unknown>;
  return { met: strings(`${field}.met`, d.met), conditions: strings(`${field}.conditions`, d.conditions) as NodeCondition[], actions: strings(`${field}.actions`, d.actions), orders: strings(`${field}.orders`, d.orders) };
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
  const out: RecordedAnswer = { line, atNs: ns(`${f}.admission.at`, a.at), at: a.at as string, afterPasses, pod, conditions: strings(`${f}.admission.conditions`, a.conditions) as NodeCondition[], admit: a.admit };
  if (a.reason !== undefined) out.reason = a.reason as string;
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
    try {
      return JSON.parse(l) as Record<string, unknown>;
    } catch (e) {
      throw new UsageError(`line ${i + 1}: not a JSON object: ${(e as Error).message}`);
    }
  });
  const h = parsed[0] as unknown as RecordingHeader | undefined;
  if (!h || h.evictdRecording !== RECORDING_VERSION) throw badValue('line 1.evictdRecording', h?.evictdRecording, `must be ${RECORDING_VERSION} (a recording of another version)`);
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
    scenario = readScenario({ config: h.config, filesystems: h.filesystems, steps: passLines.map((l) => Object.fromEntries(stepKeys.filter((k) => k in l).map((k) => [k, l[k]]))) });
  } catch (e) {
    // A scenario's field path, steps[i], is the recording's i-th pass line.
    if (e instanceof UsageError) throw new UsageError(e.message.replace(/^steps\[(\d+)\]/, (_, i: string) => `line ${passLineNumbers[Number(i)]}`));
    throw e;
  }
  // The period in force, zero included (the config's reader takes a zero one for unset).
  if (h.pressureTransitionPeriod !== undefined) scenario.config = { ...scenario.config, pressureTransitionPeriodNs: ns('line 1.pressureTransitionPeriod', h.pressureTransitionPeriod) };
  // Threshold indices count among the thresholds of the layout in force where they are written.
  const threshold = (field: string, i: unknown, layout = scenario.layout): Threshold => {
    const all = thresholdsForLayout(scenario.config.thresholds, layout);
    const t = typeof i === 'number' ? all[i] : undefined;
    if (!t) throw badValue(field, i, `must be a threshold index from 0 to ${all.length - 1}`);
    return t;
  };
  const passes = passLines.map((l, i): RecordedPass => {
    const f = `line ${passLineNumbers[i]}`;
    const layout = (l.filesystems ?? scenario.layout) as FilesystemLayout;
    if (!LAYOUTS.includes(layout)) throw badValue(`${f}.filesystems`, l.filesystems, `must be one of ${LAYOUTS.join(', ')}`);
    const brakes = l.brakes === undefined ? null : (l.brakes as { uid: string; since: string; signal?: string }[]).map((b, j): ActiveBrake => {
      if (b.signal !== undefined && !(SIGNALS as readonly string[]).includes(b.signal)) throw badValue(`${f}.brakes[${j}].signal`, b.signal, 'not a signal');
      return { uid: String(b.uid), since: ns(`${f}.brakes[${j}].since`, b.since), ...(b.signal ? { signal: b.signal as Signal } : {}) };
    });
    return {
      line: passLineNumbers[i]!,
      layout,
      wake: (l.wake ?? {}) as Record<string, number>,
      crossed: ((l.crossed ?? []) as unknown[]).map((x, j) => threshold(`${f}.crossed[${j}]`, x, layout)),
      confirmed: (l.confirmed ?? []) as RecordedConfirmation[],
      brakes,
      otherUids: strings(`${f}.otherUids`, l.otherUids),
      noCgroup: new Set(strings(`${f}.noCgroup`, l.noCgroup)),
      decided: decisions(`${f}.decided`, l.decided),
      ms: (l.ms ?? { decide: 0 }) as RecordedPass['ms'],
    };
  });
  let initial = initialState();
  if (h.state) {
    const s = h.state;
    initial = {
      firstObservedAt: new Map(s.firstObservedAt.map(([i, at], j) => [threshold(`line 1.state.firstObservedAt[${j}]`, i), ns(`line 1.state.firstObservedAt[${j}]`, at)])),
      conditionLastObservedAt: new Map(s.conditionLastObservedAt.map(([c, at], j) => [c, ns(`line 1.state.conditionLastObservedAt[${j}]`, at)])),
      thresholdsMet: s.thresholdsMet.map((i, j) => threshold(`line 1.state.thresholdsMet[${j}]`, i)),
      conditions: s.conditions,
    };
  }
  return { header: h, scenario, passes, admissions, initial, cut };
}
