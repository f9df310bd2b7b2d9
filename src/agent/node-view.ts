/**
 * The node as a pass sees it: a fresh observation, with the image filesystem where the runtime
 * last said it is (ImageFsInfo is a runtime call, so it is refreshed in the background on the
 * kubelet's cadence and may lag a pass: it only decides the filesystem layout). Shared by the
 * pass and node-level reclaim's second look, so neither calls into the other.
 */
import type { Logger } from 'pino';
import type { NodeReading } from '../node/observer';
import type { AgentMetrics } from './metrics';
import type { RuntimePort } from './ports';

/** What the agent reads the node with (NodeObserver; a fake one in unit tests). */
export interface ObserverPort {
  observe(imagefsPath?: string): NodeReading;
}

export class NodeView {
  private imagefsPath: string | undefined;

  constructor(
    private readonly observer: ObserverPort,
    private readonly runtime: RuntimePort,
    private readonly logger: Logger,
    private readonly metrics: AgentMetrics,
  ) {}

  observe(): NodeReading {
    return this.observer.observe(this.imagefsPath);
  }

  async refreshImageFs(): Promise<void> {
    try {
      this.imagefsPath = (await this.runtime.imageFsInfo())?.mountpoint || undefined;
    } catch (err) {
      this.metrics.runtimeErrors.inc({ call: 'imageFsInfo' });
      this.logger.debug({ err }, 'ImageFsInfo failed');
    }
  }
}
