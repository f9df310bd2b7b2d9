/**
 * KEP-5986's state between passes as a recording part's header carries it (`state.memoryPressure`):
 * each container's counter samples of the last rate window and its relax, and each pod's grace
 * period start, times since the recording's start. A part the size limit starts in the middle of
 * a grace period, or within a rate window of a relax, replays from it as the agent went on;
 * without it the part's replay would start every grace period and rate afresh.
 */
import { badValue } from '../errors';
import type { ContainerTrack, MemoryPressureState, Sample } from '../policy/memory-pressure';
import { count, list, map, since, sinceStart } from './recording-fields';

export interface RecordedSample {
  at: string;
  high: number;
  max: number;
}

export interface RecordedPressure {
  containers: { uid: string; container: string; samples: RecordedSample[]; relax?: 'done' | 'failed'; relaxedAt?: string }[];
  /** [pod uid, when its grace period started] */
  graceSince: [string, string][];
}

// The agent's state starts with the recording: no time in it is before the start (sinceStart clamps).

/** The state as a header carries it; null when it holds nothing (no container seen yet). */
export function recordedPressure(s: MemoryPressureState, startNs: number): RecordedPressure | null {
  if (s.containers.size === 0 && s.graceSince.size === 0) return null;
  return {
    containers: [...s.containers].map(([key, t]) => {
      const slash = key.indexOf('/'); // `${uid}/${container}`: a uid has no slash
      return {
        uid: key.slice(0, slash),
        container: key.slice(slash + 1),
        samples: t.samples.map((x) => ({ at: sinceStart(x.atNs, startNs), high: x.high, max: x.max })),
        ...(t.relax ? { relax: t.relax } : {}),
        ...(t.relaxedNs !== undefined ? { relaxedAt: sinceStart(t.relaxedNs, startNs) } : {}),
      };
    }),
    graceSince: [...s.graceSince].map(([uid, at]) => [uid, sinceStart(at, startNs)]),
  };
}

const name = (field: string, v: unknown, what: string): string => {
  if (typeof v !== 'string' || v === '' || (what === 'a pod uid' && v.includes('/'))) throw badValue(field, v, `must be ${what}`);
  return v;
};

/** A header's `state.memoryPressure` read back (times in ns since the recording's start). */
export function readRecordedPressure(field: string, v: unknown): MemoryPressureState {
  const s = map(field, v);
  const containers = new Map<string, ContainerTrack>();
  list(`${field}.containers`, s.containers).forEach((x, i) => {
    const f = `${field}.containers[${i}]`;
    const c = map(f, x);
    const samples = list(`${f}.samples`, c.samples).map((y, j): Sample => {
      const m = map(`${f}.samples[${j}]`, y);
      return { atNs: since(`${f}.samples[${j}].at`, m.at), high: count(`${f}.samples[${j}].high`, m.high), max: count(`${f}.samples[${j}].max`, m.max) };
    });
    if (samples.length === 0) throw badValue(`${f}.samples`, c.samples, 'must hold at least one sample');
    const track: ContainerTrack = { samples };
    if (c.relax !== undefined) {
      if (c.relax !== 'done' && c.relax !== 'failed') throw badValue(`${f}.relax`, c.relax, 'must be done or failed');
      track.relax = c.relax;
    }
    if (c.relaxedAt !== undefined) track.relaxedNs = since(`${f}.relaxedAt`, c.relaxedAt);
    containers.set(`${name(`${f}.uid`, c.uid, 'a pod uid')}/${name(`${f}.container`, c.container, 'a container name')}`, track);
  });
  const graceSince = new Map<string, number>();
  list(`${field}.graceSince`, s.graceSince).forEach((x, i) => {
    const f = `${field}.graceSince[${i}]`;
    if (!Array.isArray(x) || x.length !== 2) throw badValue(f, x, 'must be a pair: pod uid, time');
    graceSince.set(name(`${f}[0]`, x[0], 'a pod uid'), since(`${f}[1]`, x[1]));
  });
  return { containers, graceSince };
}
