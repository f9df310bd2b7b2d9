import { ConfigError } from '../policy/config';
import { UsageError } from '../errors';
import type { Command } from './command';


// Subcommands load lazily so `evictd simulate` does not pay for grpc or the addon.
const commands: Record<string, { summary: string; load: () => Command }> = {
  run: { summary: 'run the eviction agent on this node', load: () => require('./run').run },
  simulate: { summary: 'run the eviction policy on a recorded scenario (FILE or -)', load: () => require('./simulate').simulate },
  bench: { summary: 'benchmarks: policy | notify | cri | protect', load: () => require('./bench').bench },
  demo: { summary: 'real containerd, real cgroups, real eviction, end to end', load: () => require('../lab/demo').demo },
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

/** Entry point from bin/evictd.js: maps UsageError to exit 2 with one line, no stack trace. */
export function main(argv: string[]): void {
  dispatch(argv).then(
    (code) => {
      process.exitCode = code;
    },
    (err: unknown) => {
      if (err instanceof UsageError || err instanceof ConfigError) {
        process.stderr.write(`evictd: ${err.message}\n`);
        process.exitCode = 2;
      } else {
        process.stderr.write(`evictd: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
        process.exitCode = 1;
      }
    },
  );
}
