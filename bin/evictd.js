#!/usr/bin/env node
'use strict';
// The compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
require('../dist/src/cli/main.js').main(process.argv.slice(2));
