/**
 * The memory manager's state file, `<root-dir>/memory_manager_state`, as upstream's
 * memorymanager/state checkpoint writes it, so a Go kubelet and tskubelet take over each other's
 * node: `{"policyName":"Static","machineState":{"0":{"numberOfAssignments":…,"memoryMap":{"memory":
 * {"total":…,"systemReserved":…,"allocatable":…,"reserved":…,"free":…}},"cells":[0]}},"entries":
 * {"<pod uid>":{"<container>":[{"numaAffinity":[0],"type":"memory","size":…}]}},"checksum":…}`.
 * The checksum is FNV-32a of go-spew's `%#v` of the checkpoint struct with checksum 0
 * (checkpointmanager/checksum): maps with sorted keys, no types inside maps and slices, pointers as
 * `<*>`, nil as `<nil>` — and go-spew's quirk that a nil pointer closing a map leaves the next
 * field's type out (checked against the go-spew library on upstream's types). A file is checked
 * as Go decodes it, nulls and absent fields included; 0 is accepted unverified, as upstream. Pure,
 * but for the file I/O at the end.
 */
import { readFileSync } from 'node:fs';
import { writeFileAtomicSync } from '../../lib/fs-util.js';
import { fnv32a } from '../../lib/fnv32a.js';
import type { MachineState, MemoryAssignments, MemoryBlock, MemoryTable, NumaNodeState } from './machine-state.js';

/** The policies upstream has on Linux. */
export type MemoryManagerPolicy = 'None' | 'Static';

export interface MemoryManagerCheckpoint {
  policyName: string;
  machineState: MachineState;
  entries: MemoryAssignments;
}

const MAX_BYTES = 4 * 1024 * 1024;

// The checkpoint as Go holds it after json.Unmarshal: null where the file has null, absent fields as zero values.
interface RawTable {
  total: number;
  systemReserved: number;
  allocatable: number;
  reserved: number;
  free: number;
}
interface RawNode {
  numberOfAssignments: number;
  memoryMap: Map<string, RawTable | null> | null;
  cells: number[] | null;
}
interface RawBlock {
  numaAffinity: number[] | null;
  type: string;
  size: number;
}
interface RawCheckpoint {
  policyName: string;
  machineState: Map<number, RawNode | null> | null;
  entries: Map<string, Map<string, RawBlock[] | null> | null> | null;
  checksum: number;
}

const TABLE_FIELDS = ['total', 'systemReserved', 'allocatable', 'reserved', 'free'] as const;
const SPEW_TABLE_FIELDS = ['TotalMemSize', 'SystemReserved', 'Allocatable', 'Reserved', 'Free'];

const byNumber = (a: number, b: number) => a - b;
const byString = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** go-spew's `%#v` of upstream's *state.MemoryManagerCheckpoint, its checksum printed as 0. */
function spewCheckpoint(c: RawCheckpoint): string {
  const nil = '<nil>';
  const ints = (xs: readonly number[] | null) => (xs ? `[${xs.join(' ')}]` : nil);
  const table = (t: RawTable | null) =>
    t ? `<*>{${TABLE_FIELDS.map((f, i) => `${SPEW_TABLE_FIELDS[i]}:(uint64)${t[f]}`).join(' ')}}` : nil;
  // go-spew prints a nil pointer inside a map without clearing its "no type next" flag: when it is the map's last
  // value, the field after the map is printed without its type.
  const lastIsNil = <K>(m: Map<K, unknown> | null, order: (a: K, b: K) => number) =>
    !!m?.size && m.get([...m.keys()].sort(order).at(-1)!) === null;
  const typed = (type: string, skip: boolean) => (skip ? '' : `(${type})`);
  /** A map as go-spew prints it inside a value: its keys in `order`, no types. */
  const map = <K, V>(m: Map<K, V> | null, order: (a: K, b: K) => number, value: (v: V) => string) =>
    m
      ? `map[${[...m.keys()]
          .sort(order)
          .map((k) => `${String(k)}:${value(m.get(k)!)}`)
          .join(' ')}]`
      : nil;
  const node = (n: RawNode | null) =>
    n
      ? `<*>{${[
          `NumberOfAssignments:(int)${n.numberOfAssignments}`,
          `MemoryMap:(map[v1.ResourceName]*state.MemoryTable)${map(n.memoryMap, byString, table)}`,
          `Cells:${typed('[]int', lastIsNil(n.memoryMap, byString))}${ints(n.cells)}`,
        ].join(' ')}}`
      : nil;
  const machine = map(c.machineState, byNumber, node);
  const entriesType = typed('state.ContainerMemoryAssignments', lastIsNil(c.machineState, byNumber));
  const block = (b: RawBlock) =>
    `{NUMAAffinity:([]int)${ints(b.numaAffinity)} Type:(v1.ResourceName)${b.type} Size:(uint64)${b.size}}`;
  const blocks = (bs: RawBlock[] | null) => (bs ? `[${bs.map(block).join(' ')}]` : nil);
  const entries = map(c.entries, byString, (containers) => map(containers, byString, blocks));
  return `(*state.MemoryManagerCheckpoint){${[
    `PolicyName:(string)${c.policyName}`,
    `MachineState:(state.NUMANodeMap)${machine}`,
    `Entries:${entriesType}${entries}`,
    'Checksum:(checksum.Checksum)0',
  ].join(' ')}}`;
}

const checksumOf = (c: RawCheckpoint) => fnv32a(Buffer.from(spewCheckpoint(c), 'utf8'));

/** The file's bytes, as Go's json.Marshal writes them: map keys sorted as strings, entries left out when empty. */
function marshal(c: RawCheckpoint): string {
  const text = JSON.stringify;
  const ints = (xs: readonly number[] | null) => (xs ? `[${xs.join(',')}]` : 'null');
  const object = <K extends string | number, V>(m: Map<K, V> | null, value: (v: V) => string) =>
    m
      ? `{${[...m.keys()]
          .map((k) => [String(k), k] as const)
          .sort(([a], [b]) => byString(a, b))
          .map(([key, k]) => `${text(key)}:${value(m.get(k)!)}`)
          .join(',')}}`
      : 'null';
  const table = (t: RawTable | null) => (t ? `{${TABLE_FIELDS.map((f) => `"${f}":${t[f]}`).join(',')}}` : 'null');
  const node = (n: RawNode | null) =>
    n
      ? `{"numberOfAssignments":${n.numberOfAssignments},` +
        `"memoryMap":${object(n.memoryMap, table)},"cells":${ints(n.cells)}}`
      : 'null';
  const block = (b: RawBlock) => `{"numaAffinity":${ints(b.numaAffinity)},"type":${text(b.type)},"size":${b.size}}`;
  const blocks = (bs: RawBlock[] | null) => (bs ? `[${bs.map(block).join(',')}]` : 'null');
  const entries = c.entries?.size ? `,"entries":${object(c.entries, (m) => object(m, blocks))}` : '';
  const machineState = object(c.machineState, node);
  return `{"policyName":${text(c.policyName)},"machineState":${machineState}${entries},"checksum":${c.checksum}}`;
}

const rawOf = (c: MemoryManagerCheckpoint): RawCheckpoint => ({
  policyName: c.policyName,
  machineState: new Map(
    [...c.machineState].map(([id, n]: [number, NumaNodeState]) => [
      id,
      { numberOfAssignments: n.numberOfAssignments, memoryMap: new Map(n.memoryMap), cells: n.cells },
    ]),
  ),
  entries: new Map([...c.entries].map(([pod, containers]) => [pod, new Map(containers)])),
  checksum: 0,
});

/** The file's text for `checkpoint` (or a policy with nothing in its state), checksum included. */
export function encodeMemoryCheckpoint(checkpoint: MemoryManagerCheckpoint | string): string {
  const c =
    typeof checkpoint === 'string'
      ? { policyName: checkpoint, machineState: new Map(), entries: new Map() }
      : checkpoint;
  const raw = rawOf(c);
  return marshal({ ...raw, checksum: checksumOf(raw) });
}

// Decoding as Go's encoding/json into upstream's types: struct fields matched case-insensitively, a
// wrong type an error naming the Go field.
class JsonTypeError extends Error {
  constructor(field: string, goType: string) {
    super(`json: cannot unmarshal into Go struct field ${field} of type ${goType}`);
  }
}
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
function structField(o: Record<string, unknown>, name: string): unknown {
  if (name in o) return o[name];
  const key = Object.keys(o).find((k) => k.toLowerCase() === name.toLowerCase());
  return key === undefined ? undefined : o[key];
}
function unsigned(v: unknown, field: string): number {
  if (v === undefined || v === null) return 0;
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw new JsonTypeError(field, 'uint64');
  return v;
}
function integer(v: unknown, field: string): number {
  if (v === undefined || v === null) return 0;
  if (typeof v !== 'number' || !Number.isSafeInteger(v)) throw new JsonTypeError(field, 'int');
  return v;
}
function intList(v: unknown, field: string): number[] | null {
  if (v === undefined || v === null) return null;
  if (!Array.isArray(v)) throw new JsonTypeError(field, '[]int');
  return v.map((x) => integer(x, field));
}
function mapOf<V>(v: unknown, field: string, goType: string, value: (x: unknown) => V): Map<string, V> | null {
  if (v === undefined || v === null) return null;
  if (!isObject(v)) throw new JsonTypeError(field, goType);
  return new Map(Object.entries(v).map(([k, x]) => [k, value(x)]));
}

function decodeRaw(text: string): RawCheckpoint {
  if (text.length > MAX_BYTES) throw new Error('checkpoint is too large');
  const o: unknown = JSON.parse(text);
  if (!isObject(o)) throw new Error('json: cannot unmarshal into Go value of type state.MemoryManagerCheckpoint');
  const policyName = structField(o, 'policyName') ?? '';
  if (typeof policyName !== 'string') throw new JsonTypeError('MemoryManagerCheckpoint.policyName', 'string');
  const table = (v: unknown): RawTable | null => {
    if (v === null) return null;
    if (!isObject(v)) throw new JsonTypeError('NUMANodeState.memoryMap', 'state.MemoryTable');
    const [total, systemReserved, allocatable, reserved, free] = TABLE_FIELDS.map((f) =>
      unsigned(structField(v, f), `MemoryTable.${f}`),
    );
    return { total, systemReserved, allocatable, reserved, free };
  };
  const node = (v: unknown): RawNode | null => {
    if (v === null) return null;
    if (!isObject(v)) throw new JsonTypeError('MemoryManagerCheckpoint.machineState', 'state.NUMANodeState');
    return {
      numberOfAssignments: integer(structField(v, 'numberOfAssignments'), 'NUMANodeState.numberOfAssignments'),
      memoryMap: mapOf(structField(v, 'memoryMap'), 'NUMANodeState.memoryMap', 'map', table),
      cells: intList(structField(v, 'cells'), 'NUMANodeState.cells'),
    };
  };
  const machine = mapOf(structField(o, 'machineState'), 'MemoryManagerCheckpoint.machineState', 'map', node);
  let machineState: RawCheckpoint['machineState'] = null;
  if (machine) {
    machineState = new Map();
    for (const [key, value] of machine) {
      if (!/^-?\d+$/.test(key)) throw new JsonTypeError('MemoryManagerCheckpoint.machineState', 'int');
      machineState.set(Number(key), value);
    }
  }
  const block = (v: unknown): RawBlock => {
    if (!isObject(v)) throw new JsonTypeError('MemoryManagerCheckpoint.entries', 'state.Block');
    const type = structField(v, 'type') ?? '';
    if (typeof type !== 'string') throw new JsonTypeError('Block.type', 'v1.ResourceName');
    return {
      numaAffinity: intList(structField(v, 'numaAffinity'), 'Block.numaAffinity'),
      type,
      size: unsigned(structField(v, 'size'), 'Block.size'),
    };
  };
  const blocks = (v: unknown): RawBlock[] | null => {
    if (v === null) return null;
    if (!Array.isArray(v)) throw new JsonTypeError('MemoryManagerCheckpoint.entries', '[]state.Block');
    return v.map(block);
  };
  const containers = (v: unknown) => mapOf(v, 'MemoryManagerCheckpoint.entries', 'map', blocks);
  // Upstream decodes into a checkpoint whose entries and machine state start as empty maps.
  const entriesField = structField(o, 'entries');
  const entries =
    entriesField === undefined ? new Map() : mapOf(entriesField, 'MemoryManagerCheckpoint.entries', 'map', containers);
  const checksum = unsigned(structField(o, 'checksum'), 'MemoryManagerCheckpoint.checksum');
  return {
    policyName,
    machineState: structField(o, 'machineState') === undefined ? new Map() : machineState,
    entries,
    checksum,
  };
}

const ZERO_TABLE: MemoryTable = { total: 0, systemReserved: 0, allocatable: 0, reserved: 0, free: 0 };

/**
 * The checkpoint in `text`; throws `checkpoint is corrupted` when its checksum does not match
 * (upstream ErrCorruptCheckpoint) and Go's json error when it does not decode.
 */
export function decodeMemoryCheckpoint(text: string): MemoryManagerCheckpoint {
  const raw = decodeRaw(text);
  if (raw.checksum !== 0 && raw.checksum !== checksumOf({ ...raw, checksum: 0 }))
    throw new Error('checkpoint is corrupted');
  const machineState: MachineState = new Map();
  for (const [id, node] of raw.machineState ?? []) {
    const memoryMap = new Map<string, MemoryTable>();
    for (const [type, table] of node?.memoryMap ?? []) memoryMap.set(type, table ?? { ...ZERO_TABLE });
    machineState.set(id, {
      numberOfAssignments: node?.numberOfAssignments ?? 0,
      memoryMap,
      cells: node?.cells ?? null,
    });
  }
  const entries: MemoryAssignments = new Map();
  for (const [pod, containers] of raw.entries ?? [])
    entries.set(pod, new Map<string, MemoryBlock[] | null>(containers ?? []));
  return { policyName: raw.policyName, machineState, entries };
}

/** Writes the state file (mode 0600, as upstream's checkpoint manager), atomically. */
export const writeMemoryCheckpoint = (path: string, checkpoint: MemoryManagerCheckpoint): void =>
  writeFileAtomicSync(path, encodeMemoryCheckpoint(checkpoint), 0o600);

/**
 * Upstream's state restore (state_checkpoint.go restoreState, with NewCheckpointState's message):
 * the file's checkpoint for `policyName`, or an empty state written as the file when there is none.
 * Throws upstream's whole message for a corrupted file or one of another policy.
 */
export function restoreMemoryManagerState(path: string, policyName: string = 'None'): MemoryManagerCheckpoint {
  const empty: MemoryManagerCheckpoint = { policyName, machineState: new Map(), entries: new Map() };
  let text: string | undefined;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  if (text === undefined) {
    writeMemoryCheckpoint(path, empty);
    return empty;
  }
  try {
    const checkpoint = decodeMemoryCheckpoint(text);
    if (checkpoint.policyName !== policyName)
      throw new Error(
        `[memorymanager] configured policy ${JSON.stringify(policyName)} ` +
          `differs from state checkpoint policy ${JSON.stringify(checkpoint.policyName)}`,
      );
    return checkpoint;
  } catch (err) {
    throw new Error(
      `could not restore state from checkpoint: ${(err as Error).message}, please drain this node ` +
        `and delete the memory manager checkpoint file ${JSON.stringify(path)} before restarting Kubelet`,
      { cause: err },
    );
  }
}
