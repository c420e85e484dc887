/**
 * The memory manager's state file (`memory_manager_state`): byte for byte the one a Go kubelet
 * v1.36.2 left with the None policy, and for Static states the bytes and checksums upstream's types
 * give with the go-spew library (fixtures/memory-manager/oracle, its output in go-checkpoints.jsonl).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  decodeMemoryCheckpoint,
  encodeMemoryCheckpoint,
  restoreMemoryManagerState,
} from '../../../src/agent/memorymanager/checkpoint.js';

const fixtures = join(import.meta.dirname, '..', '..', 'fixtures');
const goKubelet = readFileSync(join(fixtures, 'go-kubelet-1.36', 'checkpoints', 'memory_manager_state'), 'utf8');
/**
 * Checkpoints as upstream's types marshal them, checksums included: nulls, no state, 12 nodes, an allocation, and nil
 * tables closing a map (go-spew then leaves the next field's type out).
 */
const fromGo = readFileSync(join(fixtures, 'memory-manager', 'go-checkpoints.jsonl'), 'utf8')
  .trim()
  .split('\n');

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});
const fileIn = (text?: string) => {
  const dir = mkdtempSync(join(tmpdir(), 'memory-state-'));
  dirs.push(dir);
  const path = join(dir, 'memory_manager_state');
  if (text !== undefined) writeFileSync(path, text);
  return path;
};

describe('memory_manager_state', () => {
  it("is written byte for byte as the Go kubelet's with the None policy, and its file is accepted", () => {
    expect(encodeMemoryCheckpoint('None')).toBe(goKubelet);
    expect(decodeMemoryCheckpoint(goKubelet)).toEqual({
      policyName: 'None',
      machineState: new Map(),
      entries: new Map(),
    });
    const path = fileIn();
    restoreMemoryManagerState(path);
    expect(readFileSync(path, 'utf8')).toBe(goKubelet);
  });

  it("leaves a Go kubelet's file as it is", () => {
    const path = fileIn(goKubelet.replace('{"policyName"', '{ "policyName"'));
    restoreMemoryManagerState(path);
    expect(readFileSync(path, 'utf8')).toBe(goKubelet.replace('{"policyName"', '{ "policyName"'));
  });

  it("checks Static states with upstream's checksum, nulls and absent fields as Go decodes them", () => {
    for (const text of fromGo) {
      expect(() => decodeMemoryCheckpoint(text), text).not.toThrow();
      const corrupted = text.replace(/"checksum":(\d+)/, (_, n: string) => `"checksum":${Number(n) + 1}`);
      expect(() => decodeMemoryCheckpoint(corrupted)).toThrow('checkpoint is corrupted');
    }
    const nulls = decodeMemoryCheckpoint(fromGo[0]);
    expect(nulls.machineState.get(0)).toEqual({ numberOfAssignments: 0, memoryMap: new Map(), cells: null });
    expect(nulls.entries.get('p')?.get('d')).toEqual([{ numaAffinity: null, type: 'memory', size: 1 }]);
  });

  it("writes a state as upstream's json.Marshal does: node keys sorted as text, the checksum go-spew's", () => {
    // Those without nulls come back byte for byte (Go's null maps and lists have no counterpart in a state we write).
    for (const text of fromGo.slice(2, 4)) expect(encodeMemoryCheckpoint(decodeMemoryCheckpoint(text))).toBe(text);
    expect(fromGo[2]).toMatch(/"machineState":\{"0":.*"1":.*"10":.*"11":.*"2":/);
  });

  it("stops the start with upstream's message for another policy's state", () => {
    const path = fileIn(fromGo[3]);
    expect(() => restoreMemoryManagerState(path, 'None')).toThrow(
      `could not restore state from checkpoint: [memorymanager] configured policy "None" differs from state checkpoint policy "Static", please drain this node and delete the memory manager checkpoint file "${path}" before restarting Kubelet`,
    );
    expect(restoreMemoryManagerState(path, 'Static').entries.size).toBe(2);
  });

  it('refuses a corrupted file (checksum) and one Go cannot decode', () => {
    const path = fileIn(goKubelet.replace('4236770233', '4236770234'));
    expect(() => restoreMemoryManagerState(path)).toThrow(
      /^could not restore state from checkpoint: checkpoint is corrupted, please drain/,
    );
    const negative = fileIn('{"policyName":"Static","machineState":{"0":{"numberOfAssignments":0,"cells":[-1.5]}}}');
    expect(() => restoreMemoryManagerState(negative, 'Static')).toThrow(
      /json: cannot unmarshal into Go struct field NUMANodeState.cells of type int/,
    );
  });
});
