/** failSwapOn: /proc/swaps read as upstream, and the kubelet refusing to start when swap is on. */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { swapOnAccordingToProcSwaps } from '../../../src/agent/node-setup/swap.js';
import { prepareHost } from '../../../src/agent/node-setup/prepare-host.js';
import { createLogger } from '../../../src/lib/logger.js';

const HEADER = 'Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n';
const dir = mkdtempSync(join(tmpdir(), 'tsk-swaps-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('swap', () => {
  it('is on when /proc/swaps lists a device below its header (upstream’s cases)', () => {
    expect(swapOnAccordingToProcSwaps(HEADER)).toBe(false);
    expect(swapOnAccordingToProcSwaps('\n\n')).toBe(false);
    expect(swapOnAccordingToProcSwaps('')).toBe(false);
    expect(swapOnAccordingToProcSwaps(`${HEADER}/dev/dm-1               partition\t33554428\t0\t\t-2\n`)).toBe(true);
    expect(
      swapOnAccordingToProcSwaps(`${HEADER}/dev/dm-1 partition 33554428 0 -2\n/dev/zram0 partition 8388604 0 100\n`),
    ).toBe(true);
  });

  it('with failSwapOn, the kubelet does not start on a node that swaps, with upstream’s error; without it, or with no swap, it does', async () => {
    const swapping = join(dir, 'swapping');
    const none = join(dir, 'none');
    writeFileSync(swapping, `${HEADER}/swap.img                               file\t\t3954684\t\t1451840\t\t-1\n`);
    writeFileSync(none, HEADER);
    let out = '';
    const logger = createLogger({
      destination: new Writable({
        write(chunk: Buffer, _enc, cb) {
          out += chunk.toString();
          cb();
        },
      }),
    });
    // The test process keeps its own OOM score.
    const oomScoreAdj = Number(readFileSync('/proc/self/oom_score_adj', 'utf8'));
    const kc = { protectKernelDefaults: false, oomScoreAdj, failSwapOn: true };
    expect(await prepareHost(kc, logger, swapping)).toBe(false);
    expect(out).toContain(
      'failed to run Kubelet: running with swap on is not supported, please disable swap or set --fail-swap-on flag to false',
    );
    expect(await prepareHost({ ...kc, failSwapOn: false }, logger, swapping)).toBe(true);
    expect(await prepareHost(kc, logger, none)).toBe(true);
    expect(await prepareHost(kc, logger, join(dir, 'absent'))).toBe(true);
  });
});
