/** status.declaredFeatures (NodeDeclaredFeatures): what a Go kubelet v1.36.2 declares, and how the gates change it. */
import { describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { declaredFeatures } from '../../../src/agent/nodestatus/declared-features.js';

const goNode = JSON.parse(
  readFileSync(join(import.meta.dirname, '..', '..', 'fixtures', 'go-kubelet-1.36', 'node.json'), 'utf8'),
) as { status: { declaredFeatures: string[] } };

describe('declared features', () => {
  it("with v1.36's default gates: the Go kubelet v1.36.2's list, in its order", () => {
    expect(declaredFeatures()).toEqual(goNode.status.declaredFeatures);
    expect(declaredFeatures({ SomeOtherGate: true })).toEqual(goNode.status.declaredFeatures);
  });

  it('leaves out a feature whose gate is off, and the whole field when NodeDeclaredFeatures is off', () => {
    expect(declaredFeatures({ RestartAllContainersOnContainerExits: false })).toEqual([
      'ExtendWebSocketsToKubelet',
      'InPlacePodLevelResourcesVerticalScaling',
      'InPlacePodVerticalScalingInitContainers',
    ]);
    expect(declaredFeatures({ NodeDeclaredFeatures: false })).toBeUndefined();
  });
});
