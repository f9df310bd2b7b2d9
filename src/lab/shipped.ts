/**
 * How node runs evictd where it is shipped (deploy/evictd.service's ExecStart, the image's
 * entrypoint: scripts/image.sh), so that the lab's runs, the demo's and the race's, measure the
 * same process. test/kube/deploy.test.ts holds the unit to it.
 *
 * --max-semi-space-size=1: V8's young generation at 1 MiB a half instead of growing to 8 or 16.
 * The agent allocates little between passes, so the larger space only holds garbage longer; on
 * Node 24 it was 5 MiB of evictd's resident memory at idle (docs/benchmarks.md, footprint).
 */
export const SHIPPED_NODE_ARGS: readonly string[] = ['--max-semi-space-size=1'];
