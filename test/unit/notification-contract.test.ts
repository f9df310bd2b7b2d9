// The notification contract against the fake port the unit tests use (see
// test/kernel/notification-contract.test.ts for the same cases on the kernel).
import { FakeNotifications } from '../support/fake-notifications';
import { notificationContract } from '../support/notification-contract';

notificationContract('fake port', async () => {
  const port = new FakeNotifications();
  let n = 0;
  return {
    port,
    deliveryMs: 200,
    rearmSettleMs: 0,
    async cgroup() {
      const dir = `/fake/cg${n++}`;
      let usage = 10 * 1024 * 1024;
      port.setUsage(dir, usage);
      return {
        dir,
        usage: () => usage,
        grow: async (bytes: number) => port.setUsage(dir, (usage += bytes)),
        shrink: async () => port.setUsage(dir, (usage = 10 * 1024 * 1024)),
        remove: async () => {},
      };
    },
  };
});
