/**
 * The memory manager's state file, `<root-dir>/memory_manager_state`, as upstream's memory manager
 * keeps it with the `None` policy (the only one tskubelet implements):
 * `{"policyName":"None","machineState":{},"checksum":4236770233}`. A Go kubelet that takes the
 * node over reads it as its own, and a file a Go kubelet left is checked as upstream checks it: a
 * corrupted file or another policy (`Static`, with its NUMA assignments) stops the start with
 * upstream's message, since its pods' memory pinning cannot be honoured. The checksum is FNV-32a
 * of go-spew's `%#v` of the checkpoint struct with checksum 0 (checkpointmanager/checksum); 0 is
 * accepted unverified, as upstream. Pure, but for the file I/O at the end.
 */
import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { fnv32a } from '../../lib/fnv32a.js';

/** The policy tskubelet runs: no NUMA pinning, nothing to assign. */
export const MEMORY_MANAGER_POLICY = 'None';

const MAX_BYTES = 4 * 1024 * 1024;

/** go-spew's `%#v` of upstream's *state.MemoryManagerCheckpoint with no machine state and no entries. */
function spewEmptyCheckpoint(policyName: string): string {
  return `(*state.MemoryManagerCheckpoint){PolicyName:(string)${policyName} MachineState:(state.NUMANodeMap)map[] Entries:(state.ContainerMemoryAssignments)map[] Checksum:(checksum.Checksum)0}`;
}

/** The file's bytes for `policyName` with nothing assigned, as Go's json.Marshal writes them. */
export function encodeMemoryCheckpoint(policyName: string): string {
  const checksum = fnv32a(Buffer.from(spewEmptyCheckpoint(policyName)));
  return JSON.stringify({ policyName, machineState: {}, checksum });
}

const isEmpty = (v: unknown) =>
  v === undefined || v === null || (typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0);

/**
 * Checks the file's `text` against the configured `policyName`; throws upstream's message
 * (without its "could not restore…" wrapper) when they disagree or the file is corrupted.
 */
export function checkMemoryCheckpoint(text: string, policyName: string): void {
  if (text.length > MAX_BYTES) throw new Error('checkpoint is too large');
  const o = JSON.parse(text) as Record<string, unknown>;
  if (!o || typeof o !== 'object' || Array.isArray(o))
    throw new Error('json: cannot unmarshal into Go value of type state.MemoryManagerCheckpoint');
  const name = o.policyName;
  if (typeof name !== 'string')
    throw new Error('json: cannot unmarshal into Go struct field MemoryManagerCheckpoint.policyName of type string');
  const checksum = o.checksum ?? 0;
  // A file with assignments (the Static policy) cannot have the empty state's checksum; its policy decides below.
  const assigned = !isEmpty(o.machineState) || !isEmpty(o.entries);
  if (checksum !== 0 && !assigned && checksum !== fnv32a(Buffer.from(spewEmptyCheckpoint(name))))
    throw new Error('checkpoint is corrupted');
  if (name !== policyName)
    throw new Error(
      `[memorymanager] configured policy ${JSON.stringify(policyName)} differs from state checkpoint policy ${JSON.stringify(name)}`,
    );
  if (assigned) throw new Error('checkpoint is corrupted');
}

/**
 * Upstream's memory manager start for the `None` policy: the state file is checked when present
 * (throws upstream's whole message), and written when missing.
 */
export function restoreMemoryManagerState(path: string, policyName = MEMORY_MANAGER_POLICY): void {
  let text: string | undefined;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  if (text !== undefined) {
    try {
      checkMemoryCheckpoint(text, policyName);
    } catch (err) {
      throw new Error(
        `could not restore state from checkpoint: ${(err as Error).message}, please drain this node and delete the memory manager checkpoint file ${JSON.stringify(path)} before restarting Kubelet`,
        { cause: err },
      );
    }
    return;
  }
  const tmp = `${path}.tmp`;
  try {
    writeFileSync(tmp, encodeMemoryCheckpoint(policyName), { mode: 0o600 });
    renameSync(tmp, path);
  } catch (err) {
    rmSync(tmp, { force: true }); // a full disk leaves no partial file behind
    throw err;
  }
}
