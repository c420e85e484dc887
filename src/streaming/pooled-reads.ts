/**
 * Reads from a socket into a few reused buffers and writes each chunk on to another stream: the
 * bulk direction of a byte relay (a runtime's exec output to a TLS client) without a new buffer
 * per read. Node's default read path allocates 64 KiB per read; under a glibc mmap threshold of
 * 32 KiB (the command's until it was raised, bin/tskubelet.js) each of those was an mmap, 16 page
 * faults and a munmap, and so was TLS's output buffer for a 64 KiB write. The pool keeps the
 * relay's cost independent of the allocator's tuning.
 *
 * 16 KiB per buffer is one TLS record of plaintext, so the encrypted output stays small too.
 * Measured relaying 200 MiB from containerd (bench/exec.bench.ts), kubelet CPU: under the 32 KiB
 * threshold 2.1-2.5 s with pipe(), 0.75-1.2 s with 64 KiB buffers (TLS still mmaps), 32 KiB no
 * better, 0.6-0.8 s with 16 KiB (4 or 8 of them alike); under today's 128 KiB, 0.64-0.83 s with
 * 16 KiB, against ~1.05 s with pipe() and no fixed threshold.
 *
 * A buffer is handed to `dest.write` and comes back to the pool in the write's callback (once
 * the destination has consumed it: TLS has encrypted it, a socket has sent it), so no chunk is
 * ever overwritten while queued. At most `buffers` writes are in flight; beyond that reading
 * pauses until one completes (backpressure, as pipe() gives). Memory per relay: (`buffers` + 1)
 * × `size`.
 */
import type { Writable } from 'node:stream';
import type { OnReadOpts } from 'node:net';

export interface PooledReads {
  /** The `onread` option for net.connect / new net.Socket. */
  readonly onread: OnReadOpts;
  /** Where chunks go; set before the socket can read (before its first data arrives). */
  pipeTo(dest: Writable, resume: () => void): void;
  /** Buffers allocated so far (tests). */
  readonly allocated: () => number;
}

export function pooledReads(buffers = 4, size = 16 * 1024): PooledReads {
  const free: Buffer[] = [];
  let allocated = 0;
  let inFlight = 0;
  let dest: Writable | undefined;
  let resume: () => void = () => undefined;
  const take = (): Buffer => free.pop() ?? (allocated++, Buffer.allocUnsafeSlow(size));
  return {
    onread: {
      buffer: take,
      callback(n: number, buf: Uint8Array): boolean {
        if (!dest || dest.destroyed) return false;
        inFlight++;
        dest.write(buf.subarray(0, n), () => {
          inFlight--;
          free.push(buf as Buffer);
          if (inFlight === buffers - 1) resume();
        });
        // Node asks for the next buffer right after this returns, so one more than `buffers` can exist.
        return inFlight < buffers;
      },
    },
    pipeTo(d, r) {
      dest = d;
      resume = r;
    },
    allocated: () => allocated,
  };
}
