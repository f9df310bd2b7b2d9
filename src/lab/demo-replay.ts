/**
 * The demo's recording, asked back: the live run's passes replayed (same evictions, same order,
 * same victims), and two what-ifs on it, a line higher and a line lower than the live one.
 */
import fs from 'node:fs';
import { readRecording } from '../sim/recording-reader';
import { differenceText, replay } from '../sim/replay';
import { whatIf } from '../sim/what-if';
import { compileConfig, configFromFlags, configFromKubeletConfiguration } from '../policy/config';
import type { LogLine } from './ramp-lab';

export interface DemoReplay {
  passes: number;
  /** pods evicted, in order, as recorded and as replayed */
  recorded: string[];
  replayed: string[];
  differences: string[];
  bytes: number;
  bytesPerPass: number;
  /** making a pass's line, after its actions (ms): mean and max */
  recordMsMean: number;
  recordMsMax: number;
  higher: { line: string; earlier: string[]; text: string[] };
  lower: { line: string; oomFirst: string[]; text: string[] };
}

export function demoReplay(file: string, agentLines: readonly LogLine[], higher: string, lower: string): DemoReplay {
  const rec = readRecording(fs.readFileSync(file, 'utf8'));
  const r = replay(rec);
  const closed = agentLines.find((l) => l.msg === 'recording closed') as { serializeMsMean?: number; serializeMsMax?: number } | undefined;
  const bytes = fs.statSync(file).size;
  const config = (line: string) =>
    compileConfig(configFromFlags({ evictionHard: `memory.available<${line}` }, configFromKubeletConfiguration(rec.header.config, 'recording config.')));
  const hi = whatIf(rec, config(higher));
  const lo = whatIf(rec, config(lower));
  const round = (x: number | undefined) => Math.round((x ?? 0) * 1000) / 1000;
  return {
    passes: r.passes,
    recorded: r.recorded.map((e) => e.pod),
    replayed: r.replayed.map((e) => e.pod),
    differences: r.differences.map(differenceText),
    bytes,
    bytesPerPass: r.passes ? Math.round(bytes / r.passes) : 0,
    recordMsMean: round(closed?.serializeMsMean),
    recordMsMax: round(closed?.serializeMsMax),
    higher: {
      line: higher,
      earlier: hi.evictions.filter((e) => e.change === 'earlier').map((e) => e.pod),
      text: hi.evictions.map((e) => `${e.pod}: ${e.change}${e.byMs ? ` by ${Math.abs(e.byMs)} ms` : ''}${e.whatIf ? ` (${e.whatIf.threshold})` : ''}`),
    },
    lower: {
      line: lower,
      oomFirst: lo.ramps.filter((x) => x.oomFirst).map((x) => x.pod),
      text: lo.ramps.map(
        (x) =>
          `${x.pod}: ${x.rateMiBs} MiB/s, line ${x.lineMiB} MiB leaves ${x.marginMs} ms, reaction ${x.reactionMs} ms by ${x.by}: ${x.oomFirst ? 'OOM killer first' : 'evicted in time'}`,
      ),
    },
  };
}
