import { UsageError } from '../errors';
import type { Command } from './command';

// Each benchmark lives in its own file under src/lab/bench/ and exports `run`.
const benches: Record<string, { summary: string; load: () => Command }> = {
  policy: { summary: 'time of one decision pass at 110, 1000, 10000 pods', load: () => require('../lab/bench/policy').run },
  notify: { summary: 'kernel notification latency per mechanism vs polling', load: () => require('../lab/bench/notify').run },
  cri: { summary: 'CRI call and whole-eviction latency on a real containerd', load: () => require('../lab/bench/cri').run },
  protect: { summary: 'OOM-kill avoidance across memory ramp rates vs polling', load: () => require('../lab/bench/protect').run },
  'memory-pressure': {
    summary: 'KEP-5986: memory.events crossing to relax and to stop, kernel-woken vs the 10 s cycle',
    load: () => require('../lab/bench/memory-pressure').run,
  },
};

export const bench: Command = async (argv) => {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h') {
    const lines = ['usage: evictd bench <name> [--json]', ''];
    for (const [n, b] of Object.entries(benches)) lines.push(`  ${n.padEnd(15)} ${b.summary}`);
    process.stdout.write(lines.join('\n') + '\n');
    return name === undefined ? 2 : 0;
  }
  const b = benches[name];
  if (!b) throw new UsageError(`bench: unknown benchmark ${JSON.stringify(name)} (one of ${Object.keys(benches).join(', ')})`);
  return b.load()(rest);
};
