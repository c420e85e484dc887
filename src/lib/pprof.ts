/**
 * V8's profiles in Go's pprof format (profile.proto, gzip-compressed as Go's runtime/pprof writes
 * it), so `go tool pprof` and everything built on it read the kubelet's /debug/pprof answers as
 * they read the Go kubelet's. Pure: a profile in, the encoded bytes out.
 */
import { gzipSync } from 'node:zlib';
import { Function as ProfileFunction, Location, Profile, Sample, StringTable, ValueType } from 'pprof-format';

/** Where V8 places a frame (inspector's Runtime.CallFrame; line and column are 0-based). */
export interface V8CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}

/** The inspector's Profiler.Profile. */
export interface V8CpuProfile {
  nodes: { id: number; callFrame: V8CallFrame; hitCount?: number; children?: number[] }[];
  /** Microseconds. */
  startTime: number;
  endTime: number;
}

/** The inspector's HeapProfiler.SamplingHeapProfile. */
export interface V8HeapProfile {
  head: V8HeapNode;
  samples: { size: number; nodeId: number }[];
}

export interface V8HeapNode {
  id: number;
  callFrame: V8CallFrame;
  children: V8HeapNode[];
}

/** V8's pseudo-frames that are not code: the root of every tree, and time the thread spent waiting. */
const NOT_CODE = new Set(['(root)', '(idle)']);

/**
 * A CPU profile as Go's: sample types samples/count and cpu/nanoseconds, one sample per distinct
 * stack, each tick `intervalMicros` long. Ticks where the thread was idle are left out: Go's profile
 * counts only time on a CPU.
 */
export function cpuProfileToPprof(profile: V8CpuProfile, intervalMicros: number, startedAtMs: number): Buffer {
  const table = new ProfileTable();
  const parentOf = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parentOf.set(child, node.id);
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const periodNanos = intervalMicros * 1000;
  const samples: Sample[] = [];
  for (const node of profile.nodes) {
    const hits = node.hitCount ?? 0;
    if (hits === 0 || NOT_CODE.has(node.callFrame.functionName)) continue;
    const stack: number[] = [];
    for (let id: number | undefined = node.id; id !== undefined; id = parentOf.get(id)) {
      const frame = byId.get(id)!;
      if (frame.callFrame.functionName !== '(root)') stack.push(table.location(frame.id, frame.callFrame));
    }
    samples.push(new Sample({ locationId: stack, value: [hits, hits * periodNanos] }));
  }
  return table.encode({
    sampleType: [table.valueType('samples', 'count'), table.valueType('cpu', 'nanoseconds')],
    sample: samples,
    periodType: table.valueType('cpu', 'nanoseconds'),
    period: periodNanos,
    timeNanos: BigInt(Math.round(startedAtMs)) * 1_000_000n,
    durationNanos: Math.round((profile.endTime - profile.startTime) * 1000),
  });
}

/**
 * A heap profile as Go's in-use one, from V8's sampling heap profiler (which keeps the samples of
 * live objects only): sample type inuse_space/bytes. The inspector gives each sample's size already
 * scaled to the allocations it stands for, but not the objects' own sizes, so the profile has no
 * object counts (Go's inuse_objects).
 */
export function heapProfileToPprof(profile: V8HeapProfile, intervalBytes: number, takenAtMs: number): Buffer {
  const table = new ProfileTable();
  const bytesOf = new Map<number, number>();
  for (const sample of profile.samples) bytesOf.set(sample.nodeId, (bytesOf.get(sample.nodeId) ?? 0) + sample.size);
  const samples: Sample[] = [];
  const visit = (node: V8HeapNode, callers: readonly number[]): void => {
    const stack =
      node.callFrame.functionName === '(root)' ? callers : [table.location(node.id, node.callFrame), ...callers];
    const bytes = bytesOf.get(node.id);
    if (bytes) samples.push(new Sample({ locationId: [...stack], value: [bytes] }));
    for (const child of node.children) visit(child, stack);
  };
  visit(profile.head, []);
  return table.encode({
    sampleType: [table.valueType('inuse_space', 'bytes')],
    sample: samples,
    periodType: table.valueType('space', 'bytes'),
    period: intervalBytes,
    timeNanos: BigInt(Math.round(takenAtMs)) * 1_000_000n,
  });
}

/** The string, function and location tables of one profile being built. */
class ProfileTable {
  readonly strings = new StringTable();
  private readonly functions = new Map<string, ProfileFunction>();
  private readonly locations = new Map<number, Location>();

  valueType(type: string, unit: string): ValueType {
    return new ValueType({ type: this.strings.dedup(type), unit: this.strings.dedup(unit) });
  }

  /** The location of V8's node `nodeId` (one per node: a node is one frame of one call path). */
  location(nodeId: number, frame: V8CallFrame): number {
    if (!this.locations.has(nodeId)) {
      const functionId = this.function(frame);
      const line = { functionId, line: frame.lineNumber + 1, column: frame.columnNumber + 1 };
      this.locations.set(nodeId, new Location({ id: nodeId, line: [line] }));
    }
    return nodeId;
  }

  private function(frame: V8CallFrame): number {
    const name = frame.functionName || '(anonymous)';
    const key = `${name}\u0000${frame.url}\u0000${frame.lineNumber}`;
    let found = this.functions.get(key);
    if (!found) {
      found = new ProfileFunction({
        id: this.functions.size + 1,
        name: this.strings.dedup(name),
        systemName: this.strings.dedup(name),
        filename: this.strings.dedup(frame.url),
        startLine: frame.lineNumber + 1,
      });
      this.functions.set(key, found);
    }
    return Number(found.id);
  }

  encode(fields: ConstructorParameters<typeof Profile>[0]): Buffer {
    const profile = new Profile({
      ...fields,
      function: [...this.functions.values()],
      location: [...this.locations.values()],
      stringTable: this.strings,
    });
    return gzipSync(profile.encode());
  }
}
