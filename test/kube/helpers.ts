import { KubeClient } from '../../src/kube/client';
import type { Log } from '../../src/log';

export function client(url: string, timeoutMs = 1000): KubeClient {
  return new KubeClient({ server: url, token: 'test-token' }, { timeoutMs });
}

/** A logger that keeps every line, to assert what evictd says. */
export class MemoryLogger implements Log {
  readonly lines: { level: string; msg: string; obj: object }[] = [];
  debug(obj: object, msg: string) {
    this.lines.push({ level: 'debug', msg, obj });
  }
  info(obj: object, msg: string) {
    this.lines.push({ level: 'info', msg, obj });
  }
  warn(obj: object, msg: string) {
    this.lines.push({ level: 'warn', msg, obj });
  }
  error(obj: object, msg: string) {
    this.lines.push({ level: 'error', msg, obj });
  }
  has(level: string, pattern: RegExp): boolean {
    return this.lines.some((l) => l.level === level && pattern.test(l.msg));
  }
}
