/**
 * Between passes: re-read the memory numbers (two small cgroup files) and move the threshold
 * lines if inactive_file drifted. No runtime call, no policy pass. Every second, and ten times
 * as often when usage is near a line, where inactive_file shrinking is what brings the line to
 * usage (see Arming.update) and no kernel event will say so.
 */
import type { Logger } from 'pino';
import type { NodeObserver } from '../node/observer';
import type { NodeStats } from '../policy/types';
import type { Arming } from './arming';
import { cancel } from './clock';
import type { Clock, Timer } from './ports';

const DRIFT_TICK_MS = 1000;
const DRIFT_TICK_NEAR_MS = 100;
/** within this of a line, usage is near it */
const nearLineBytes = (capacityBytes: number): number => Math.max(64 * 1024 * 1024, capacityBytes / 16);

export interface DriftTickOptions {
  arming: Arming;
  observer: Pick<NodeObserver, 'observeMemory'>;
  /** a pass is running: it reads the node itself */
  busy: () => boolean;
  /** with standing orders: the tick's numbers (a pass to place one); true when they put a hard memory line near (ticks faster there) */
  nearHardLine: ((node: NodeStats) => boolean) | null;
  logger: Logger;
  clock: Clock;
}

export class DriftTick {
  private timer: Timer | null = null;

  constructor(private readonly o: DriftTickOptions) {}

  start(): void {
    this.schedule(DRIFT_TICK_MS);
  }

  stop(): void {
    this.timer = cancel(this.timer);
  }

  private tick(): void {
    this.timer = null;
    let next = DRIFT_TICK_MS;
    if (!this.o.busy()) {
      try {
        const m = this.o.observer.observeMemory();
        this.o.arming.update(m.memory, m.allocatable, { wakeOnMet: true });
        const gap = this.o.arming.headroomBytes();
        if (gap !== null && gap < nearLineBytes(m.memory.capacityBytes)) next = DRIFT_TICK_NEAR_MS;
        const node: NodeStats = { memory: { availableBytes: m.memory.availableBytes, workingSetBytes: m.memory.workingSetBytes } };
        if (m.allocatable) node.allocatableMemory = { availableBytes: m.allocatable.availableBytes, workingSetBytes: m.allocatable.workingSetBytes };
        if (this.o.nearHardLine?.(node)) next = DRIFT_TICK_NEAR_MS;
      } catch (err) {
        this.o.logger.debug({ err }, 'drift tick failed');
      }
    }
    this.schedule(next);
  }

  private schedule(ms: number): void {
    this.timer?.cancel();
    // In the background: the drift tick alone never keeps the process alive.
    this.timer = this.o.clock.after(ms, () => this.tick(), true);
  }
}
