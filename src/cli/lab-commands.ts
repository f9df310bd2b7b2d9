/**
 * The commands that run the lab (a source checkout only: cli/source-checkout.ts), in one module
 * so the build can put them in a bundle of their own (scripts/bundle.mjs): `evictd run` then
 * parses none of the demo's and benches' code at its start.
 */
export { bench } from './bench';
export { demo } from '../lab/demo';
