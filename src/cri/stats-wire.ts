/**
 * Decoders for the two stats answers (ListContainerStats, ListPodSandboxStats), read straight
 * from the wire in one pass. They give what proto-loader gives (protoOptions: defaults, longs as
 * numbers, keepCase) for the fields the kubelet reads; the others are skipped unread and left at
 * their defaults: a container's annotations and swap, a sandbox's labels, annotations, Windows
 * part and container stats (ListContainerStats has them).
 *
 * Why not protobufjs: decoding 100 containers' stats into messages, converting them to objects,
 * and making a Long for every 64-bit number was the idle kubelet's largest cost after the relist.
 * Measured again with stock V8 (docs/performance-history.md, 29 November): proto-loader's
 * decoders in place of this one and reused-list-items.ts cost the idle kubelet about a third more
 * CPU at 100 pods. Malformed bytes throw, as protobufjs does, and the call fails.
 */
import { field, readField, utf8 } from './wire.js';

/** How one field is read: a scalar, a map<string,string>, a (repeated) message, or skipped at its default. */
type Kind =
  | 'string'
  | 'int64'
  | 'uint64'
  | 'uint32'
  | 'map'
  | 'UInt64Value'
  | { message: Schema; repeated?: boolean }
  | { skip: 'message' | 'map' | 'repeated' };

/** A message: its fields by number, each with the key it has in the decoded object. */
interface Schema {
  byNumber: (Field | undefined)[];
  all: Field[];
}
type Field = readonly [key: string, kind: Kind];

function schema(fields: Record<number, Field>): Schema {
  const byNumber: Schema['byNumber'] = [];
  for (const [n, f] of Object.entries(fields)) byNumber[Number(n)] = f;
  return { byNumber, all: Object.values(fields) };
}

const message = (m: Schema, repeated = false): Kind => ({ message: m, repeated });
/** A wrapped uint64, the most frequent message: read in place (its only field is 1). */
const u64: Kind = 'UInt64Value';

const CpuUsage = schema({
  1: ['timestamp', 'int64'],
  2: ['usage_core_nano_seconds', u64],
  3: ['usage_nano_cores', u64],
});
const MemoryUsage = schema({
  1: ['timestamp', 'int64'],
  2: ['working_set_bytes', u64],
  3: ['available_bytes', u64],
  4: ['usage_bytes', u64],
  5: ['rss_bytes', u64],
  6: ['page_faults', u64],
  7: ['major_page_faults', u64],
});
const FilesystemUsage = schema({
  1: ['timestamp', 'int64'],
  2: ['fs_id', message(schema({ 1: ['mountpoint', 'string'] }))],
  3: ['used_bytes', u64],
  4: ['inodes_used', u64],
});
const ContainerStats = schema({
  1: [
    'attributes',
    message(
      schema({
        1: ['id', 'string'],
        2: ['metadata', message(schema({ 1: ['name', 'string'], 2: ['attempt', 'uint32'] }))],
        3: ['labels', 'map'],
        4: ['annotations', { skip: 'map' }],
      }),
    ),
  ],
  2: ['cpu', message(CpuUsage)],
  3: ['memory', message(MemoryUsage)],
  4: ['writable_layer', message(FilesystemUsage)],
  5: [
    'swap',
    message(schema({ 1: ['timestamp', 'int64'], 2: ['swap_available_bytes', u64], 3: ['swap_usage_bytes', u64] })),
  ],
});
const NetworkInterfaceUsage = schema({
  1: ['name', 'string'],
  2: ['rx_bytes', u64],
  3: ['rx_errors', u64],
  4: ['tx_bytes', u64],
  5: ['tx_errors', u64],
});
const PodSandboxStats = schema({
  1: [
    'attributes',
    message(
      schema({
        1: ['id', 'string'],
        2: [
          'metadata',
          message(
            schema({
              1: ['name', 'string'],
              2: ['uid', 'string'],
              3: ['namespace', 'string'],
              4: ['attempt', 'uint32'],
            }),
          ),
        ],
        3: ['labels', { skip: 'map' }],
        4: ['annotations', { skip: 'map' }],
      }),
    ),
  ],
  2: [
    'linux',
    message(
      schema({
        1: ['cpu', message(CpuUsage)],
        2: ['memory', message(MemoryUsage)],
        3: [
          'network',
          message(
            schema({
              1: ['timestamp', 'int64'],
              2: ['default_interface', message(NetworkInterfaceUsage)],
              3: ['interfaces', message(NetworkInterfaceUsage, true)],
            }),
          ),
        ],
        4: ['process', message(schema({ 1: ['timestamp', 'int64'], 2: ['process_count', u64] }))],
        5: ['containers', { skip: 'repeated' }],
      }),
    ),
  ],
  3: ['windows', { skip: 'message' }],
});
const statsList = (item: Schema) => schema({ 1: ['stats', message(item, true)] });
const ListContainerStatsResponse = statsList(ContainerStats);
const ListPodSandboxStatsResponse = statsList(PodSandboxStats);

/** ListContainerStatsResponse's bytes, decoded. */
export function decodeListContainerStats(b: Buffer): unknown {
  return decode(b, 0, b.length, ListContainerStatsResponse);
}

/** ListPodSandboxStatsResponse's bytes, decoded. */
export function decodeListPodSandboxStats(b: Buffer): unknown {
  return decode(b, 0, b.length, ListPodSandboxStatsResponse);
}

function defaultOf(kind: Kind): unknown {
  if (kind === 'string') return '';
  if (kind === 'UInt64Value') return null;
  if (kind === 'map') return {};
  if (typeof kind === 'string') return 0;
  if ('skip' in kind) return kind.skip === 'message' ? null : kind.skip === 'map' ? {} : [];
  return kind.repeated ? [] : null;
}

function malformed(): never {
  throw new Error('invalid wire format in a CRI stats answer');
}

function decode(b: Buffer, pos: number, to: number, s: Schema): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  // Indexed loops and no array destructuring: under the interpreter each iterator is an allocation.
  for (let i = 0; i < s.all.length; i++) out[s.all[i][0]] = defaultOf(s.all[i][1]);
  while (pos < to) {
    if (!readField(b, pos, to)) malformed();
    // Taken before a nested decode reads fields of its own.
    const { tag, valueStart, end } = field;
    pos = end;
    const f = s.byNumber[tag >>> 3];
    if (f === undefined) continue;
    const key = f[0];
    const kind = f[1];
    if ((tag & 7) !== (kind === 'int64' || kind === 'uint64' || kind === 'uint32' ? 0 : 2)) malformed();
    if (kind === 'string') out[key] = utf8(b, valueStart, end);
    else if (kind === 'UInt64Value') out[key] = { value: uint64Value(b, valueStart, end) };
    else if (kind === 'int64') out[key] = long(b, valueStart, end, true);
    else if (kind === 'uint64') out[key] = long(b, valueStart, end, false);
    else if (kind === 'uint32') {
      long(b, valueStart, end, false);
      out[key] = lo;
    } else if (kind === 'map') mapEntry(b, valueStart, end, out[key] as Record<string, string>);
    else if ('message' in kind) {
      const value = decode(b, valueStart, end, kind.message);
      if (kind.repeated) (out[key] as unknown[]).push(value);
      else out[key] = value;
    }
  }
  return out;
}

/** UInt64Value's value (field 1; the last one wins, others skipped) in b[pos, to). */
function uint64Value(b: Buffer, pos: number, to: number): number {
  let value = 0;
  while (pos < to) {
    if (!readField(b, pos, to)) malformed();
    const { tag, valueStart, end } = field;
    pos = end;
    if (tag === 0x08) value = long(b, valueStart, end, false);
    else if (tag >>> 3 === 1) malformed();
  }
  return value;
}

/** One map<string,string> entry (key = 1, value = 2) into `into`. */
function mapEntry(b: Buffer, pos: number, to: number, into: Record<string, string>): void {
  let k = '';
  let v = '';
  while (pos < to) {
    if (!readField(b, pos, to)) malformed();
    const { tag, valueStart, end } = field;
    pos = end;
    if (tag === 0x0a) k = utf8(b, valueStart, end);
    else if (tag === 0x12) v = utf8(b, valueStart, end);
  }
  into[k] = v;
}

/** The low and high 32 bits of the last `long` read. */
let lo = 0;
let hi = 0;

/**
 * The varint at b[pos, end) as a number, exactly as protobufjs's LongBits.toNumber makes it (two
 * 32-bit halves; above 2^53 rounded the same way). At most 10 bytes.
 */
function long(b: Buffer, pos: number, end: number, signed: boolean): number {
  if (end - pos > 10) malformed();
  lo = 0;
  hi = 0;
  let shift = 0;
  for (; pos < end && shift < 28; shift += 7) lo = (lo | ((b[pos++] & 0x7f) << shift)) >>> 0;
  if (pos < end) {
    const byte = b[pos++] & 0x7f;
    lo = (lo | (byte << 28)) >>> 0;
    hi = byte >>> 4;
    for (shift = 3; pos < end; shift += 7) hi = (hi | ((b[pos++] & 0x7f) << shift)) >>> 0;
  }
  if (signed && hi >>> 31) {
    const l = (~lo + 1) >>> 0;
    let h = ~hi >>> 0;
    if (!l) h = (h + 1) >>> 0;
    return -(l + h * 4294967296);
  }
  return hi ? lo + hi * 4294967296 : lo;
}
