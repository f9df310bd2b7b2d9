/**
 * Makes the native addon fail to load in a process started with `node --require <this file>`, as
 * on a node where it was not built: its `require` throws. Test code only.
 */
import Module from 'node:module';

const ADDON = 'evictd_kernel.node';
const mod = Module as unknown as { _load: (request: string, parent: unknown, isMain: boolean) => unknown };
const load = mod._load;
mod._load = function (request, parent, isMain) {
  if (request.endsWith(ADDON)) throw new Error(`Cannot find module '${request}' (hidden by test/support/no-addon)`);
  return load.call(this, request, parent, isMain);
};

/** The node arguments that load this file. */
export const NO_ADDON_REQUIRE = ['--require', __filename];
