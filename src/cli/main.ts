import { ConfigError } from '../policy/config';
import { EnvironmentError, UsageError } from '../errors';
import type { Command } from './command';
import { needsSourceCheckout } from './source-checkout';

// Subcommands load lazily so `evictd simulate` does not pay for grpc or the addon, and the lab's
// through one module, which the build bundles apart (lab-commands.ts).
const lab = (): typeof import('./lab-commands') => require('./lab-commands');
const commands: Record<string, { summary: string; load: () => Command }> = {
  run: { summary: 'run the eviction agent on this node', load: () => require('./run').run },
  record: { summary: 'observe this node as run does, act on nothing, record each pass to FILE', load: () => require('./record').record },
  simulate: {
    summary: 'run the eviction policy on a scenario or a recording (FILE or -); what if, with threshold flags',
    load: () => require('./simulate').simulate,
  },
  bench: { summary: 'benchmarks: policy | notify | cri | protect | memory-pressure', load: () => needsSourceCheckout('evictd bench', () => lab().bench) },
  demo: {
    summary: 'real containerd, real cgroups, real eviction, end to end',
    load: () => needsSourceCheckout('evictd demo', () => lab().demo),
  },
};

export function usage(): string {
  const lines = ['usage: evictd <command> [options]', '', 'commands:'];
  for (const [name, c] of Object.entries(commands)) lines.push(`  ${name.padEnd(10)} ${c.summary}`);
  lines.push('', 'Run `evictd <command> --help` for the options of one command.');
  return lines.join('\n');
}

export async function dispatch(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    process.stdout.write(usage() + '\n');
    return name === undefined ? 2 : 0;
  }
  if (name === '--version' || name === '-v') {
    process.stdout.write(require('../../../package.json').version + '\n');
    return 0;
  }
  const command = commands[name];
  if (!command) throw new UsageError(`unknown command ${JSON.stringify(name)} (try evictd --help)`);
  return command.load()(rest);
}

/**
 * An error's kind by its name, not `instanceof`: the lab's commands run from a bundle of their
 * own (lab-commands.ts), whose copies of these classes are other classes with the same names.
 */
const isA = (err: unknown, kind: { name: string }): err is Error => err instanceof Error && err.name === kind.name;

/**
 * What a failed command prints and its exit status: a bad input is one line and exit 2; what the
 * machine lacks (EnvironmentError) one line and exit 1; anything else is a bug: its stack, exit 1.
 */
export function failure(err: unknown): { code: number; text: string } {
  if (isA(err, UsageError) || isA(err, ConfigError)) return { code: 2, text: `evictd: ${err.message}\n` };
  if (isA(err, EnvironmentError)) return { code: 1, text: `evictd: ${err.message.replace(/\s*\n\s*/g, ' ')}\n` };
  return { code: 1, text: `evictd: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n` };
}

/** Entry point from bin/evictd.js. */
export function main(argv: string[]): void {
  dispatch(argv).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      const f = failure(err);
      // Exit, not just set the code: a start that failed half-way (a port in use after the
      // metrics server and the API watch came up) leaves handles that would keep a process
      // with no agent alive, where a supervisor should see it die and restart it.
      process.stderr.write(f.text, () => process.exit(f.code));
    },
  );
}
