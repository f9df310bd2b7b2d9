/**
 * `evictd record FILE [run flags]`: the agent as an observer. It runs as `evictd run --dry-run
 * --record FILE` does: every pass observes and decides, nothing is acted on, and each pass's
 * numbers and decisions go to FILE for `evictd simulate` to replay and ask "what if".
 */
import { UsageError } from '../errors';
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
  if (rest.some((a) => /^--?(record|dry-run)(=|$)/.test(a))) throw new UsageError('record: --record and --dry-run are set by evictd record itself');
  return run([...rest, '--record', file, '--dry-run']);
};
