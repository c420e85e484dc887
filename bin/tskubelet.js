#!/usr/bin/env node
// Entry point of the `tskubelet` command: runs the compiled CLI (npm run build writes dist/).
// Once main has shut everything down it exits, so a handle left behind (a client that never hung
// up, say) cannot keep a stopped kubelet alive.
import { main } from '../dist/main.js';

main(process.argv.slice(2)).then(
  (code) => process.exit(typeof code === 'number' ? code : 0),
  (err) => { console.error(err); process.exit(1); },
);
