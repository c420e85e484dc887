/**
 * The CPU manager's state file, `<root-dir>/cpu_manager_state`, in upstream's v2 checkpoint format
 * so the Go kubelet and tskubelet can take over each other's node:
 * `{"policyName":"static","defaultCpuSet":"0,3","entries":{"<pod uid>":{"<container>":"1-2"}},"checksum":…}`.
 * The checksum is upstream's: FNV-32a of go-spew's `%#v` of the checkpoint struct with checksum 0
 * (checkpointmanager/checksum); 0 is accepted unverified, as upstream. Pure, but for the file I/O
 * at the end.
 */
import { readFileSync } from 'node:fs';
import { writeFileAtomicSync } from '../../lib/fs-util.js';
import { formatCpuSet, parseCpuSet, type CpuSet } from '../../lib/cpuset.js';
import { fnv32a } from '../../lib/fnv32a.js';

export interface CpuManagerState {
  policyName: string;
  defaultCpuSet: CpuSet;
  /** pod UID → container name → its exclusive CPUs. */
  entries: Map<string, Map<string, CpuSet>>;
}

const fnv32aOf = (text: string) => fnv32a(Buffer.from(text, 'utf8'));

const sortedKeys = <V>(m: ReadonlyMap<string, V>) => [...m.keys()].sort();

/** go-spew's `%#v` of upstream's *state.CPUManagerCheckpoint for `s` (checksum 0; entries never nil). */
export function spewCheckpoint(s: {
  policyName: string;
  defaultCpuSet: string;
  entries: ReadonlyMap<string, ReadonlyMap<string, string>>;
}): string {
  const inner = (m: ReadonlyMap<string, string>) =>
    `map[${sortedKeys(m)
      .map((k) => `${k}:${m.get(k)}`)
      .join(' ')}]`;
  const entries = `map[${sortedKeys(s.entries)
    .map((k) => `${k}:${inner(s.entries.get(k)!)}`)
    .join(' ')}]`;
  return `(*state.CPUManagerCheckpoint){PolicyName:(string)${s.policyName} DefaultCPUSet:(string)${s.defaultCpuSet} Entries:(map[string]map[string]string)${entries} Checksum:(checksum.Checksum)0}`;
}

const asText = (s: CpuManagerState) => ({
  policyName: s.policyName,
  defaultCpuSet: formatCpuSet(s.defaultCpuSet),
  entries: new Map(
    [...s.entries].map(([pod, cs]) => [pod, new Map([...cs].map(([c, set]) => [c, formatCpuSet(set)]))]),
  ),
});

/** The file's bytes, as Go's json.Marshal writes the checkpoint (sorted keys, entries left out when empty). */
export function encodeCheckpoint(s: CpuManagerState): string {
  const t = asText(s);
  const entries = Object.fromEntries(
    sortedKeys(t.entries).map((p) => [
      p,
      Object.fromEntries(sortedKeys(t.entries.get(p)!).map((c) => [c, t.entries.get(p)!.get(c)])),
    ]),
  );
  return JSON.stringify({
    policyName: t.policyName,
    defaultCpuSet: t.defaultCpuSet,
    ...(t.entries.size ? { entries } : {}),
    checksum: fnv32aOf(spewCheckpoint(t)),
  });
}

/** Go's encoding/json matches field names case-insensitively. */
function field(o: Record<string, unknown>, name: string): unknown {
  const key = Object.keys(o).find((k) => k.toLowerCase() === name.toLowerCase());
  return key === undefined ? undefined : o[key];
}

const MAX_BYTES = 4 * 1024 * 1024;

/**
 * The state in `text`, checked against `policyName`; throws upstream's message (without its "could not restore…"
 * wrapper).
 */
export function decodeCheckpoint(text: string, policyName: string): CpuManagerState {
  if (text.length > MAX_BYTES) throw new Error('checkpoint is too large');
  const o = JSON.parse(text) as Record<string, unknown>;
  if (!o || typeof o !== 'object' || Array.isArray(o))
    throw new Error('json: cannot unmarshal into Go value of type state.CPUManagerCheckpoint');
  const str = (v: unknown, what: string) => {
    if (v !== undefined && typeof v !== 'string')
      throw new Error(
        `json: cannot unmarshal ${typeof v} into Go struct field CPUManagerCheckpoint.${what} of type string`,
      );
    return v ?? '';
  };
  const name = str(field(o, 'policyName'), 'policyName');
  const defaultText = str(field(o, 'defaultCpuSet'), 'defaultCpuSet');
  const rawEntries = field(o, 'entries') ?? {};
  if (typeof rawEntries !== 'object' || rawEntries === null || Array.isArray(rawEntries))
    throw new Error(
      'json: cannot unmarshal into Go struct field CPUManagerCheckpoint.entries of type map[string]map[string]string',
    );
  const textEntries = new Map<string, Map<string, string>>();
  for (const [pod, cs] of Object.entries(rawEntries as Record<string, unknown>)) {
    if (typeof cs !== 'object' || cs === null || Array.isArray(cs))
      throw new Error(
        'json: cannot unmarshal string into Go struct field CPUManagerCheckpointV2.entries of type map[string]string',
      );
    textEntries.set(
      pod,
      new Map(Object.entries(cs as Record<string, unknown>).map(([c, v]) => [c, str(v, 'entries')])),
    );
  }
  const checksum = field(o, 'checksum') ?? 0;
  if (
    checksum !== 0 &&
    checksum !== fnv32aOf(spewCheckpoint({ policyName: name, defaultCpuSet: defaultText, entries: textEntries }))
  )
    throw new Error('checkpoint is corrupted');
  if (name !== policyName)
    throw new Error(
      `configured policy ${JSON.stringify(policyName)} differs from state checkpoint policy ${JSON.stringify(name)}`,
    );
  let defaultCpuSet: CpuSet;
  try {
    defaultCpuSet = parseCpuSet(defaultText);
  } catch (err) {
    throw new Error(`could not parse default cpu set ${JSON.stringify(defaultText)}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  const entries = new Map<string, Map<string, CpuSet>>();
  for (const [pod, cs] of textEntries) {
    const m = new Map<string, CpuSet>();
    for (const [c, v] of cs) {
      try {
        m.set(c, parseCpuSet(v));
      } catch (err) {
        throw new Error(
          `could not parse cpuset ${JSON.stringify(v)} for container ${JSON.stringify(c)} in pod ${JSON.stringify(pod)}: ${(err as Error).message}`,
          {
            cause: err,
          },
        );
      }
    }
    entries.set(pod, m);
  }
  return { policyName, defaultCpuSet, entries };
}

/** The state in `path` (an empty one for `policyName` when there is no file); throws upstream's full message. */
export function readCheckpoint(path: string, policyName: string): CpuManagerState {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { policyName, defaultCpuSet: [], entries: new Map() };
    throw err;
  }
  try {
    return decodeCheckpoint(text, policyName);
  } catch (err) {
    throw new Error(
      `could not restore state from checkpoint: ${(err as Error).message}, please drain this node and delete the CPU manager checkpoint file ${JSON.stringify(path)} before restarting Kubelet`,
      { cause: err },
    );
  }
}

/**
 * Writes the state (a temporary file renamed over it: a crash leaves the old or the new one). Synchronous: rare and
 * small.
 */
export function writeCheckpoint(path: string, s: CpuManagerState): void {
  writeFileAtomicSync(path, encodeCheckpoint(s), 0o644);
}
