/**
 * `evictd record FILE [run flags]`: the agent as an observer. It runs as `evictd run --dry-run
 * --record FILE` does: every pass observes and decides, nothing is acted on, and each pass's
 * numbers and decisions go to FILE for `evictd simulate` to replay and ask "what if".
 */
import { UsageError, badValue } from '../errors';
import type { Command } from './command';
import { run } from './run';

const HELP = `usage: evictd record FILE [evictd run flags]

Observes the node as evictd run does and records each pass (what it saw, what it would have
decided) to FILE, one JSON line per pass, acting on nothing (--dry-run). evictd simulate FILE
replays the recording; with threshold flags it says what another config would have done.
The format is in docs/scenarios.md#recordings.`;

export const record: Command = async (argv) => {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(HELP + '\n');
    return 0;
  }
  const [file, ...rest] = argv;
  if (file === undefined || file.startsWith('-')) throw new UsageError('record: expected the recording FILE first (evictd record FILE [run flags])');
  const i = rest.findIndex((a) => /^--?(record|dry-run)(=|$)/.test(a));
  if (i >= 0) {
    const [flag, given] = rest[i]!.split(/=(.*)/s) as [string, string | undefined];
    const value = given ?? (flag.endsWith('dry-run') ? 'true' : (rest[i + 1] ?? ''));
    throw badValue(flag, value, 'is set by evictd record itself (it records to FILE and acts on nothing)');
  }
  return run([...rest, '--record', file, '--dry-run']);
};
