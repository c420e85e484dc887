/**
 * A terminal's input (process-runtime/pty.ts) against a real pseudo-terminal whose process does not read it: the
 * writer waits for the terminal instead of queueing without bound or retrying at every turn of the event loop, and
 * what the process does read arrives whole.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import type { IPty } from 'node-pty';
import { loadPty, onTerminalOutput, RAW_TERMINAL, terminalInput } from '../../src/process-runtime/pty.js';

let terminal: IPty | undefined;
afterEach(() => terminal?.kill('SIGKILL'));

async function spawn(script: string): Promise<{ terminal: IPty; output: () => Buffer }> {
  const pty = await loadPty();
  const spawned = pty.spawn('sh', ['-c', script], { name: 'xterm', cols: 80, rows: 24, ...RAW_TERMINAL });
  const chunks: Buffer[] = [];
  onTerminalOutput(spawned, (bytes) => chunks.push(bytes));
  terminal = spawned;
  return { terminal: spawned, output: () => Buffer.concat(chunks) };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('terminalInput', () => {
  // Regression: node-pty's own write queued everything and, while the terminal was full, retried at every turn of
  // the event loop: 90 % of a core for as long as the process did not read.
  it('waits on a full terminal: bounded, and without keeping a core busy', async () => {
    const { terminal: full } = await spawn('stty raw -echo; sleep 30');
    await sleep(300);
    const input = terminalInput(full);
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    let accepted = 0;
    for (let i = 0; i < 64; i++) {
      if (!input.write(chunk)) break;
      accepted += chunk.length;
    }
    await sleep(500);
    const before = process.cpuUsage();
    await sleep(2_000);
    const used = process.cpuUsage(before);
    // The writer stopped taking more after its own buffer, and the 2 s of waiting cost far less than a busy core.
    expect((used.user + used.system) / 1e6).toBeLessThan(1);
    expect(accepted).toBeLessThan(1 << 20);
    expect(input.writableNeedDrain).toBe(true);
  }, 20_000);

  it('a process that reads gets every byte, in order', async () => {
    const { terminal: reader, output } = await spawn('stty raw -echo; head -c 300000 | md5sum');
    await sleep(300);
    const input = terminalInput(reader);
    const data = Buffer.alloc(300_000);
    for (let i = 0; i < data.length; i++) data[i] = i % 251;
    for (let offset = 0; offset < data.length; offset += 7_000) input.write(data.subarray(offset, offset + 7_000));
    await new Promise<void>((resolve) => reader.onExit(() => resolve()));
    expect(output().toString()).toContain(createHash('md5').update(data).digest('hex'));
  }, 20_000);
});
