#!/usr/bin/env -S MALLOC_ARENA_MAX=2 GLIBC_TUNABLES=glibc.malloc.trim_threshold=131072:glibc.malloc.mmap_threshold=131072 node --max-semi-space-size=1 --lite-mode
// Entry point of the `tskubelet` command: runs the compiled CLI (npm run build writes dist/).
// Once main has shut everything down it exits, so a handle left behind (a client that never hung
// up, say) cannot keep a stopped kubelet alive.
//
// --max-semi-space-size=1 (MiB): V8's young generation otherwise grows to 3 × 16 MiB after the
// allocation burst of starting pods and stays committed; capped, a kubelet with 100 pods holds
// ~50 MiB less RSS, at the same idle CPU and /pods throughput (bench/).
// MALLOC_ARENA_MAX=2 and fixed glibc trim/mmap thresholds: V8's worker threads (concurrent
// compile and GC) otherwise each get a malloc arena that keeps what they freed, and the mmap
// threshold ratchets up after a burst; together ~8 MiB less RSS at 100 pods (bench/scale).
// The mmap threshold is 128 KiB (glibc's initial one, fixed), not lower: every socket or pipe
// read allocates 64 KiB first, and under a 32 KiB threshold each was an mmap, 16 page faults and
// a munmap — embedded exec over WebSocket 42 → 81 MiB/s, 10-20 % less kubelet CPU while pods
// start; RSS after 35 s idle the same with 100 pods (61-63 MiB), +3 MiB with 250 (69.3 vs 66.3).
// --lite-mode: V8 runs the kubelet's JavaScript in its interpreter only (no baseline or optimizing
// compiler, feedback allocated lazily). Compiled code and the compilers' own pages were ~12 MiB of
// a kubelet's RSS with 100 pods (75 → 63 MiB, bench/scale); start and stop times did not move, as
// most of a kubelet's work is native (syscalls, TLS, HTTP/2, JSON). The cost: JS that loops over
// bytes is slower (idle CPU with 100 pods 1.18 % instead of 0.9-1.1 %, embedded exec over WebSocket
// 105 instead of 171 MiB/s, /pods 3.9k instead of 5k req/s). WebAssembly is off in this mode,
// so nothing may use fetch (its parser is WebAssembly): lib/http-get.ts instead.
// Tests and benches spawn the kubelet with the variables and flags of this line
// (test/e2e/helpers.ts kubeletCommandLine), so they measure what operators run.
import { main } from '../dist/main.js';

main(process.argv.slice(2)).then(
  (code) => process.exit(typeof code === 'number' ? code : 0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
