/**
 * failSwapOn: upstream refuses to start on a node with swap on unless told otherwise
 * (cm.NewContainerManager, swap.IsSwapOn over /proc/swaps).
 */
import { readFile } from 'node:fs/promises';

/** Upstream's error, after "failed to run Kubelet: ". */
export const SWAP_ON_ERROR =
  'running with swap on is not supported, please disable swap or set --fail-swap-on flag to false';

/** Whether /proc/swaps lists a swap device: more than its header line (upstream isSwapOnAccordingToProcSwaps). Pure. */
export function swapOnAccordingToProcSwaps(content: string): boolean {
  return content.trim().split('\n').length > 1;
}

/** Whether swap is on; false where the kernel has no /proc/swaps (built without swap). */
export async function swapIsOn(procSwaps = '/proc/swaps'): Promise<boolean> {
  const content = await readFile(procSwaps, 'utf8').catch(() => '');
  return swapOnAccordingToProcSwaps(content);
}
