/**
 * The CPU manager's state file in upstream's v2 checkpoint format: the checksum is upstream's (its
 * own test fixtures' checksums verify), and a file that does not fit is refused with upstream's
 * messages.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  decodeCheckpoint,
  encodeCheckpoint,
  readCheckpoint,
  writeCheckpoint,
} from '../../../src/agent/cpumanager/checkpoint.js';
import { formatCpuSet, parseCpuSet } from '../../../src/lib/cpuset.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-cpuckpt-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// Checkpoints from upstream's state_checkpoint_test.go (1.32), with the checksums the Go kubelet wrote.
const fixture = (policy: string, def: string, entries: string, checksum: number) =>
  `{"policyName": "${policy}", "defaultCPUSet": "${def}", ${entries ? `"entries": ${entries},` : ''} "checksum": ${checksum}}`;

describe('cpu_manager_state', () => {
  it("reads the Go kubelet's checkpoints: their checksums verify", () => {
    expect(decodeCheckpoint(fixture('none', '4-6', '{}', 354655845), 'none')).toEqual({
      policyName: 'none',
      defaultCpuSet: [4, 5, 6],
      entries: new Map(),
    });
    const s = decodeCheckpoint(
      fixture('none', '1-3', '{"pod": {"container1": "4-6", "container2": "1-3"}}', 3610638499),
      'none',
    );
    expect(s.entries.get('pod')).toEqual(
      new Map([
        ['container1', [4, 5, 6]],
        ['container2', [1, 2, 3]],
      ]),
    );
    // A checksum of 0 is accepted unverified, as upstream (the old file backend).
    expect(decodeCheckpoint(fixture('static', '0-3', '', 0), 'static').defaultCpuSet).toEqual([0, 1, 2, 3]);
  });

  it("writes what the Go kubelet reads: Go's JSON and the same checksum", () => {
    const text = encodeCheckpoint({
      policyName: 'none',
      defaultCpuSet: [1, 2, 3],
      entries: new Map([
        [
          'pod',
          new Map([
            ['container2', [1, 2, 3]],
            ['container1', [4, 5, 6]],
          ]),
        ],
      ]),
    });
    expect(text).toBe(
      '{"policyName":"none","defaultCpuSet":"1-3","entries":{"pod":{"container1":"4-6","container2":"1-3"}},"checksum":3610638499}',
    );
    expect(encodeCheckpoint({ policyName: 'none', defaultCpuSet: [4, 5, 6], entries: new Map() })).toBe(
      '{"policyName":"none","defaultCpuSet":"4-6","checksum":354655845}',
    );
    // What every Go kubelet with the default policy leaves in /var/lib/kubelet/cpu_manager_state.
    expect(encodeCheckpoint({ policyName: 'none', defaultCpuSet: [], entries: new Map() })).toBe(
      '{"policyName":"none","defaultCpuSet":"","checksum":1353318690}',
    );
  });

  it("refuses with upstream's messages: a bad checksum, another policy, unparsable sets, broken JSON", () => {
    expect(() => decodeCheckpoint(fixture('none', '4-6', '{}', 1337), 'none')).toThrow('checkpoint is corrupted');
    expect(() => decodeCheckpoint(fixture('other', '1-3', '{}', 1394507217), 'none')).toThrow(
      'configured policy "none" differs from state checkpoint policy "other"',
    );
    expect(() => decodeCheckpoint(fixture('none', '1.3', '{}', 3021697696), 'none')).toThrow(
      'could not parse default cpu set "1.3": strconv.Atoi: parsing "1.3": invalid syntax',
    );
    expect(() =>
      decodeCheckpoint(
        fixture('none', '1-3', '{"pod": {"container1": "4-6", "container2": "asd"}}', 962272150),
        'none',
      ),
    ).toThrow(
      'could not parse cpuset "asd" for container "container2" in pod "pod": strconv.Atoi: parsing "asd": invalid syntax',
    );
    expect(() => decodeCheckpoint('{', 'none')).toThrow();
    expect(() => decodeCheckpoint('[]', 'none')).toThrow();
    expect(() => decodeCheckpoint(fixture('none', '0', '{"pod": "1"}', 0), 'none')).toThrow(/cannot unmarshal/);
  });

  it('keeps the state across restarts in one file; no file is an empty state; a refusal names the file to delete', () => {
    const path = join(dir, 'cpu_manager_state');
    expect(readCheckpoint(path, 'static')).toEqual({ policyName: 'static', defaultCpuSet: [], entries: new Map() });
    writeCheckpoint(path, {
      policyName: 'static',
      defaultCpuSet: [0, 3],
      entries: new Map([['u1', new Map([['c', [1, 2]]])]]),
    });
    expect(readCheckpoint(path, 'static').entries.get('u1')?.get('c')).toEqual([1, 2]);
    expect(() => readCheckpoint(path, 'none')).toThrow(
      `could not restore state from checkpoint: configured policy "none" differs from state checkpoint policy "static", please drain this node and delete the CPU manager checkpoint file "${path}" before restarting Kubelet`,
    );
    writeFileSync(path, readFileSync(path, 'utf8').replace('"1-2"', '"1-3"'));
    expect(() => readCheckpoint(path, 'static')).toThrow('checkpoint is corrupted');
  });
});

describe('cpu sets', () => {
  it('parses and prints the kernel list format, with upstream errors', () => {
    expect(parseCpuSet('0-3,7, 9-10'.replace(' ', ''))).toEqual([0, 1, 2, 3, 7, 9, 10]);
    expect(parseCpuSet('')).toEqual([]);
    expect(formatCpuSet([0, 1, 2, 5, 7, 8])).toBe('0-2,5,7-8');
    expect(formatCpuSet([])).toBe('');
    expect(() => parseCpuSet('1.3')).toThrow('strconv.Atoi: parsing "1.3": invalid syntax');
    expect(() => parseCpuSet('3-1')).toThrow('invalid range');
    expect(() => parseCpuSet('0-99999999')).toThrow('invalid range');
  });
});
