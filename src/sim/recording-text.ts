/**
 * A pass's line (src/sim/recording.ts) made as text, for `--record`, whose line follows every
 * pass. Most of a line is the pods' specs (names, requests and limits as quantities, volumes),
 * which stay the same pass after pass: a spec's part is made into JSON text once, kept with gaps
 * where stats go, and each pass fills in the gaps. The text is JSON.stringify(passLine(p)) to the
 * byte (test/unit/recording-text.test.ts): the reader sees no difference.
 */
import { Quantity } from '../policy/quantity';
import type { ActivePod, ContainerUsage, FilesystemLayout, PodSpec, VolumeUsage } from '../policy/types';
import { containerNames, placeUsage, specContainer, specHead, specVolume, USAGE_FIELDS, type UsagePlacement } from './recorded-pod';
import { passLineParts, type PassInput } from './recording';

/** A place in a pod's text where its stats go, if it has them. */
type Gap = { kind: 'container'; index: number } | { kind: 'volume'; name: string } | { kind: 'containerUsage' } | { kind: 'processes' };

/** A spec's part of its pod's line: `text[0]`, gap 0, `text[1]`, ..., the last text. */
interface SpecText {
  names: string[];
  text: string[];
  gaps: Gap[];
}

/** An object's text without its closing brace, for more members to follow. */
const open = (o: Record<string, unknown>): string => JSON.stringify(o).slice(0, -1);

function specText(s: PodSpec): SpecText {
  const t: SpecText = { names: containerNames(s), text: [], gaps: [] };
  let cur = open(specHead(s));
  const gap = (g: Gap) => {
    t.text.push(cur);
    t.gaps.push(g);
    cur = '';
  };
  const list = (field: string, items: readonly Record<string, unknown>[], gapOf: (i: number) => Gap) => {
    cur += `,"${field}":[`;
    items.forEach((x, i) => {
      cur += (i > 0 ? ',' : '') + open(x);
      gap(gapOf(i));
      cur += '}';
    });
    cur += ']';
  };
  const apps = s.containers.length;
  list(
    'containers',
    s.containers.map((c) => specContainer(c, false)),
    (i) => ({ kind: 'container', index: i }),
  );
  if (s.initContainers?.length)
    list(
      'initContainers',
      s.initContainers.map((c) => specContainer(c, true)),
      (i) => ({ kind: 'container', index: apps + i }),
    );
  gap({ kind: 'containerUsage' });
  if (s.volumes.length) list('volumes', s.volumes.map(specVolume), (i) => ({ kind: 'volume', name: s.volumes[i]!.name }));
  gap({ kind: 'processes' });
  t.text.push(cur + '}');
  return t;
}

/**
 * Whether two specs (or parts of them) hold the same values, keys in the same order (a resource
 * list is written in its own order): a spec's text is made of nothing else. Fields the line
 * leaves out count too; a difference there only makes the text again.
 */
function sameValues(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a instanceof Quantity && b instanceof Quantity) return a.toString() === b.toString();
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (let i = 0; i < ka.length; i++)
    if (ka[i] !== kb[i] || !sameValues((a as Record<string, unknown>)[ka[i]!], (b as Record<string, unknown>)[kb[i]!])) return false;
  return true;
}

/**
 * The pods' spec texts, from one pass to the next, by uid. A spec is replaced, never changed in
 * place (a pod source's update is a new object), so the same object has the same text; so does a
 * new object of the same values, as a spec made from a sandbox alone is, afresh each pass. What
 * a pass did not see is let go at the next.
 */
export class SpecTexts {
  private current = new Map<string, { spec: PodSpec; text: SpecText }>();
  private previous = new Map<string, { spec: PodSpec; text: SpecText }>();

  of(s: PodSpec): SpecText {
    let kept = this.current.get(s.uid) ?? this.previous.get(s.uid);
    if (kept && kept.spec !== s && sameValues(kept.spec, s)) kept.spec = s;
    if (kept?.spec !== s) kept = { spec: s, text: specText(s) };
    this.current.set(s.uid, kept);
    return kept.text;
  }

  /** A pass's line is made: the specs it did not see go at the next one. */
  endPass(): void {
    this.previous = this.current;
    this.current = new Map();
  }
}

/** A number as JSON.stringify writes it. */
const num = (x: number): string => (Number.isFinite(x) ? String(x) : 'null');

const USAGE_KEYS = USAGE_FIELDS.map(([key, field]) => [`,${JSON.stringify(key)}:`, field] as const);

/** A container's stats as members of an object, each after a comma. */
function usageMembers(u: ContainerUsage): string {
  let out = '';
  for (const [key, field] of USAGE_KEYS) {
    const x = u[field];
    if (x !== undefined) out += key + num(x);
  }
  // KEP-5986's per-container signals, after the scalars as recordedPod puts them
  if (u.memoryEvents) out += `,"memoryEvents":{"high":${num(u.memoryEvents.high)},"max":${num(u.memoryEvents.max)}}`;
  if (u.memoryPressureSomeAvg10 !== undefined) out += `,"memoryPressure":{"someAvg10":${num(u.memoryPressureSomeAvg10)}}`;
  return out;
}

function volumeStats(volumes: readonly VolumeUsage[], name: string): VolumeUsage | undefined {
  for (const v of volumes) if (v.name === name) return v;
  return undefined;
}

/** What goes in a gap for this pod's stats ('' for none). */
function gapText(g: Gap, p: ActivePod, place: UsagePlacement): string {
  const u = p.usage;
  switch (g.kind) {
    case 'container': {
      const c = place.onContainers?.[g.index];
      if (c) return `,"usage":{${usageMembers(c).slice(1)}}`;
      return g.index === 0 && place.emptyOnFirst ? ',"usage":{}' : '';
    }
    case 'containerUsage':
      if (!u || place.onContainers) return '';
      return `,"containerUsage":[${u.containers.map((c) => `{"name":${JSON.stringify(c.name)}${usageMembers(c)}}`).join(',')}]`;
    case 'volume': {
      const v = u && volumeStats(u.volumes, g.name);
      if (!v) return '';
      return `,"usage":${num(v.usedBytes)}${v.inodesUsed !== undefined ? `,"inodes":${num(v.inodesUsed)}` : ''}`;
    }
    case 'processes':
      return u?.processes !== undefined ? `,"processes":${num(u.processes)}` : '';
  }
}

/** A pod's part of the line: JSON.stringify(recordedPod(p)). */
export function podText(p: ActivePod, specs: SpecTexts): string {
  const t = specs.of(p.spec);
  const place = placeUsage(p, t.names);
  let out = t.text[0]!;
  for (let i = 0; i < t.gaps.length; i++) out += gapText(t.gaps[i]!, p, place) + t.text[i + 1]!;
  return out;
}

/**
 * A line's text but its pods: `head` up to them, `tail(headerLayout)` after them. The tail says
 * the pass's own layout when the header of the part the line lands in says another; the caller
 * may know that part only later (the recorder makes a line's pods after the pass).
 */
export interface LineEnds {
  head: string;
  tail(headerLayout: FilesystemLayout): string;
}

export function lineEnds(p: Omit<PassInput, 'headerLayout' | 'pods'>): LineEnds {
  // Made as if the header said the pass's layout: the tail then has no `filesystems`, which
  // passLineParts puts first in it when it is there.
  const { head, tail } = passLineParts({ ...p, headerLayout: p.layout });
  const rest = JSON.stringify(tail).slice(1);
  const own = `],"filesystems":${JSON.stringify(p.layout)},${rest}`;
  return { head: `${open(head)},"pods":[`, tail: (headerLayout) => (headerLayout === p.layout ? `],${rest}` : own) };
}

/** One pass's line as text, without its newline: JSON.stringify(passLine(p)). */
export function passLineText(p: PassInput, specs = new SpecTexts()): string {
  const ends = lineEnds(p);
  let pods = '';
  for (let i = 0; i < p.pods.length; i++) pods += (i > 0 ? ',' : '') + podText(p.pods[i]!, specs);
  specs.endPass();
  return ends.head + pods + ends.tail(p.headerLayout);
}
