// The notification contract against the kernel: the agent's own port (kernelNotifications) on a
// real memory cgroup, charged by a real workload. Whatever mechanism this kernel gives the port
// (a memcg threshold on cgroup v1, the fallback elsewhere), the cases of the fake must hold.
import fs from 'node:fs';
import path from 'node:path';
import pino from 'pino';
import { kernelNotifications } from '../../src/agent/adapters/kernel-notifications';
import { detectCgroups } from '../../src/node/cgroups';
import { Memhog, ScratchCgroup } from '../../src/lab/workload';
import { notificationContract } from '../support/notification-contract';
import { missingKernel } from './support';

notificationContract('kernel port', async () => {
  const missing = missingKernel();
  if (missing !== null) return missing;
  const layout = detectCgroups();
  const usageFile = layout.memoryVersion === 1 ? 'memory.usage_in_bytes' : 'memory.current';
  return {
    port: kernelNotifications(pino({ level: 'silent' })),
    // The polling fallback sees a crossing within its interval (100 ms); leave room for a busy CPU.
    deliveryMs: 3000,
    rearmSettleMs: 1000,
    async cgroup() {
      const cg = ScratchCgroup.create(layout.memoryMount, 'contract', layout.memoryVersion);
      const hog = await Memhog.start([cg.dir]);
      return {
        dir: cg.dir,
        usage: () => Number(fs.readFileSync(path.join(cg.dir, usageFile), 'utf8')),
        grow: async (bytes: number) => void (await hog.alloc(bytes)),
        shrink: async () => void (await hog.free()),
        remove: async () => {
          hog.kill();
          await hog.exited;
          await cg.remove();
        },
      };
    },
  };
});
