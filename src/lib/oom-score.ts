/** The kubelet's own OOM score (upstream oomScoreAdj, -999 by default: the kernel kills it last). */
import { writeFile } from 'node:fs/promises';
import { messageOf } from './errors.js';

/** Sets this process's oom_score_adj; the error when it cannot (lowering it needs root), as upstream only logs it. */
export async function applyOomScoreAdj(value: number, path = '/proc/self/oom_score_adj'): Promise<string | undefined> {
  try {
    await writeFile(path, String(value));
    return undefined;
  } catch (err) {
    return messageOf(err);
  }
}
