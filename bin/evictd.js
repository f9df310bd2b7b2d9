#!/usr/bin/env node
'use strict';
// The compiled CLI lives in dist/ (built by `npm ci` through the prepare script). It runs from
// the bundle (scripts/bundle.mjs: one file, several times faster to load than the tree's ~400
// modules), except in a source checkout whose tree was compiled after the bundle (a bare `tsc`
// since the last `npm run build`), so an edit never runs from a stale bundle. An installed
// package has no src/ and always its bundle: its files' mtimes are the unpacking's, not the build's.
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const cli = path.join(root, 'dist', 'src', 'cli');
function entry() {
  let bundle;
  try {
    bundle = fs.statSync(path.join(cli, 'main.bundle.js')).mtimeMs;
  } catch {
    return 'main.js'; // no bundle: the tree
  }
  if (!fs.existsSync(path.join(root, 'src'))) return 'main.bundle.js';
  try {
    return bundle >= fs.statSync(path.join(cli, 'main.js')).mtimeMs ? 'main.bundle.js' : 'main.js';
  } catch {
    return 'main.bundle.js';
  }
}
require(path.join(cli, entry())).main(process.argv.slice(2));
