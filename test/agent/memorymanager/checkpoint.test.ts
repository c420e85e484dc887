/** The memory manager's state file (`memory_manager_state`) against the one a Go kubelet v1.36.2 left. */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  checkMemoryCheckpoint,
  encodeMemoryCheckpoint,
  restoreMemoryManagerState,
} from '../../../src/agent/memorymanager/checkpoint.js';

const fixture = readFileSync(
  join(import.meta.dirname, '..', '..', 'fixtures', 'go-kubelet-1.36', 'checkpoints', 'memory_manager_state'),
  'utf8',
);

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
    expect(encodeMemoryCheckpoint('None')).toBe(fixture);
    expect(() => checkMemoryCheckpoint(fixture, 'None')).not.toThrow();
    const path = fileIn();
    restoreMemoryManagerState(path);
    expect(readFileSync(path, 'utf8')).toBe(fixture);
  });

  it("leaves a Go kubelet's file as it is", () => {
    const path = fileIn(fixture.replace('{"policyName"', '{ "policyName"'));
    restoreMemoryManagerState(path);
    expect(readFileSync(path, 'utf8')).toBe(fixture.replace('{"policyName"', '{ "policyName"'));
  });

  it("stops the start with upstream's message for a Static policy's state", () => {
    const path = fileIn(
      '{"policyName":"Static","machineState":{"0":{"numberOfAssignments":1,"memoryMap":{}}},"entries":{"u":{"c":[]}},"checksum":1}',
    );
    expect(() => restoreMemoryManagerState(path)).toThrow(
      `could not restore state from checkpoint: [memorymanager] configured policy "None" differs from state checkpoint policy "Static", please drain this node and delete the memory manager checkpoint file "${path}" before restarting Kubelet`,
    );
  });

  it('refuses a corrupted file (checksum)', () => {
    const path = fileIn(fixture.replace('4236770233', '4236770234'));
    expect(() => restoreMemoryManagerState(path)).toThrow(
      /^could not restore state from checkpoint: checkpoint is corrupted, please drain/,
    );
  });
});
