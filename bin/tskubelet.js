#!/usr/bin/env node
// Entry point of the `tskubelet` command: runs the compiled CLI (npm run build writes dist/).
import { main } from '../dist/main.js';

main(process.argv.slice(2)).then((code) => { if (typeof code === 'number') process.exitCode = code; });
