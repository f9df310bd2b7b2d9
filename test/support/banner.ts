/**
 * `node dist/test/support/banner.js SUITE`: the first line of each suite's output (package.json's
 * test:* scripts), saying which configuration it ran in: this host or the pure cgroup v2 VM.
 */
import { configuration, requireKernel } from './environment';

console.log(`# evictd ${process.argv[2] ?? 'test'} suite: ${configuration()}${requireKernel ? '; skips fail (EVICTD_REQUIRE_KERNEL=1)' : ''}`);
