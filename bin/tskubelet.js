#!/usr/bin/env node
// Entry point of the `tskubelet` command: runs the compiled CLI (npm run build, or npm pack's
// prepack, writes dist/). Once main has shut everything down it exits, so a handle left behind (a
// client that never hung up, say) cannot keep a stopped kubelet alive.
//
// Stock V8 and no flags here: a shebang's flags are lost to `node bin/tskubelet.js`, to systemd's
// `ExecStart=node …` and to an env without -S. The memory settings the figures in
// docs/performance.md are measured with (a 1 MiB semi-space, two malloc arenas, fixed glibc
// thresholds; why each: docs/performance-history.md) are in the systemd unit
// (packaging/systemd/tskubelet.service), which the tests and benches read too. V8's code flushing,
// which Node does not take in NODE_OPTIONS, is set by main itself (src/lib/v8-code-flushing.ts).
//
// SIGUSR1 is taken before anything else loads: Node's own answer to it is to open its inspector on 127.0.0.1:9229,
// unauthenticated, in a process that runs as root, where any local user or hostNetwork pod could then run code as
// root. A listener stops that; main logs the signals it takes (src/main.ts).
process.on('SIGUSR1', () => {});
const { main } = await import('../dist/main.js');

main(process.argv.slice(2)).then(
  (code) => process.exit(typeof code === 'number' ? code : 0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
