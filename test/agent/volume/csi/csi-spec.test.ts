import { GoStatusError } from '../../../../src/cri/unary-caller.js';
import { describe, expect, it } from 'vitest';
import { execFileSync } from 'node:child_process';
import {
  attachmentName,
  blockPaths,
  csiAccessMode,
  highestSupportedVersion,
  inlineVolumeHandle,
  isValidDriverName,
  parseVolData,
  podInfoAttrs,
  stagingPath,
  uniqueVolumeName,
} from '../../../../src/agent/volume/csi/csi-spec.js';
import { annotationWith, driverEntry, driversWith } from '../../../../src/agent/volume/csi/csi-node-info.js';
import { failedExpansionStatus, needsNodeExpansion } from '../../../../src/agent/volume/csi/csi-expand.js';

/** sha256 by coreutils, not node:crypto: the names must be what upstream's Go computes. */
const sha256sum = (s: string) => execFileSync('sha256sum', { input: s }).toString().split(' ')[0];

describe('CSI names and paths (upstream pkg/volume/csi)', () => {
  it('VolumeAttachment name is csi-<sha256(handle + driver + node)>; inline handle csi-<sha256(podUID + volume)>', () => {
    expect(attachmentName('vol-1', 'd.csi', 'n1')).toBe(`csi-${sha256sum('vol-1d.csin1')}`);
    expect(attachmentName('vol-1', 'd.csi', 'n1')).toHaveLength(68);
    expect(inlineVolumeHandle('uid-1', 'data')).toBe(`csi-${sha256sum('uid-1data')}`);
  });
  it('staging path is <root>/plugins/kubernetes.io/csi/<driver>/<sha256(handle)>/globalmount', () => {
    expect(stagingPath('/var/lib/kubelet', 'd.csi', 'h')).toBe(
      `/var/lib/kubelet/plugins/kubernetes.io/csi/d.csi/${sha256sum('h')}/globalmount`,
    );
    expect(uniqueVolumeName('d.csi', 'h')).toBe('kubernetes.io/csi/d.csi^h');
  });
  it("a raw block PV's paths are upstream's (csi_block.go)", () => {
    expect(blockPaths('/var/lib/kubelet', 'pv1', 'uid1')).toEqual({
      staging: '/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/staging/pv1',
      stageRecordDir: '/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/pv1/data',
      publish: '/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/publish/pv1/uid1',
      globalMap: '/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/pv1/dev/uid1',
      podDeviceMap: '/var/lib/kubelet/pods/uid1/volumeDevices/kubernetes.io~csi/pv1',
    });
  });
  it.each([
    [undefined, false, 'SINGLE_NODE_WRITER'],
    [['ReadWriteOnce'], false, 'SINGLE_NODE_WRITER'],
    [['ReadWriteOnce'], true, 'SINGLE_NODE_MULTI_WRITER'],
    [['ReadWriteOncePod'], false, 'SINGLE_NODE_WRITER'],
    [['ReadWriteOncePod'], true, 'SINGLE_NODE_SINGLE_WRITER'],
    [['ReadOnlyMany', 'ReadWriteOnce'], false, 'MULTI_NODE_READER_ONLY'],
    [['ReadWriteMany'], false, 'MULTI_NODE_MULTI_WRITER'],
  ])('access modes %j (single-node multi-writer capability %s) → %s', (modes, snmw, want) => {
    expect(csiAccessMode(modes, snmw)).toBe(want);
  });
  it.each([
    [['1.0.0'], '1.0.0'],
    [['0.3.0', '1.2.0', '1.10.1', 'v1.9'], '1.10.1'],
    [['0.3.0'], undefined],
    [['2.0.0'], undefined],
    [['banana'], undefined],
    [[], undefined],
  ])('driver versions %j → %s', (versions, want) => {
    const v = highestSupportedVersion(versions);
    expect(v.ok ? v.version : undefined).toBe(want);
  });
  it.each([
    ['hostpath.csi.k8s.io', true],
    ['Ebs.CSI.aws.com', true],
    ['a', true],
    ['../../etc', false],
    ['a/b', false],
    ['a..b', false],
    ['-a', false],
    ['', false],
    ['x'.repeat(64), false],
  ])('driver name %j valid: %s', (name, ok) => {
    expect(isValidDriverName(name)).toBe(ok);
  });
  it('pod info attributes as upstream getPodInfoAttrs', () => {
    expect(
      podInfoAttrs(
        {
          metadata: { name: 'p', namespace: 'ns', uid: 'u' },
          spec: { containers: [], serviceAccountName: 'sa' },
        } as never,
        true,
      ),
    ).toEqual({
      'csi.storage.k8s.io/pod.name': 'p',
      'csi.storage.k8s.io/pod.namespace': 'ns',
      'csi.storage.k8s.io/pod.uid': 'u',
      'csi.storage.k8s.io/serviceAccount.name': 'sa',
      'csi.storage.k8s.io/ephemeral': 'true',
    });
  });
  it('vol_data.json without a handle or driver is refused', () => {
    expect(parseVolData('{"volumeHandle":"h","driverName":"d"}').volumeHandle).toBe('h');
    expect(() => parseVolData('{"volumeHandle":"h"}')).toThrow(/no volumeHandle or driverName/);
    expect(() => parseVolData('[1')).toThrow();
  });
});

describe('CSINode entries and the node-ID annotation (upstream nodeinfomanager)', () => {
  it('a driver entry carries sorted topology keys and the volume limit only when set', () => {
    expect(driverEntry('d', { node_id: 'n', max_volumes_per_node: 0, accessible_topology: null })).toEqual({
      name: 'd',
      nodeID: 'n',
      topologyKeys: null,
    });
    expect(
      driverEntry('d', {
        node_id: 'n',
        max_volumes_per_node: 3,
        accessible_topology: { segments: { z: '1', a: '2' } },
      }),
    ).toEqual({
      name: 'd',
      nodeID: 'n',
      topologyKeys: ['a', 'z'],
      allocatable: { count: 3 },
    });
  });
  it('install replaces an entry of the same name; uninstall removes it and keeps the others', () => {
    const a = { name: 'a', nodeID: '1', topologyKeys: null };
    const b = { name: 'b', nodeID: '2', topologyKeys: null };
    expect(driversWith([a, b], { ...a, nodeID: '9' })).toEqual([b, { ...a, nodeID: '9' }]);
    expect(driversWith([a, b], { name: 'a', remove: true })).toEqual([b]);
  });
  it('the annotation is a JSON map of driver → node ID; gone when empty; an unparsable one is overwritten', () => {
    expect(annotationWith(undefined, 'd', 'n1')).toBe('{"d":"n1"}');
    expect(annotationWith('{"e":"x"}', 'd', 'n1')).toBe('{"e":"x","d":"n1"}');
    expect(annotationWith('{"d":"n1"}', 'd')).toBeUndefined();
    expect(annotationWith('not json', 'd', 'n1')).toBe('{"d":"n1"}');
  });
});

describe('needsNodeExpansion (upstream node expander)', () => {
  const pv = (storage: string) => ({ spec: { capacity: { storage } } });
  it.each([
    [
      'PV grown, but no resizer gave the node its turn',
      pv('2Gi'),
      { status: { capacity: { storage: '1Gi' } } },
      undefined,
    ],
    [
      'the node’s turn',
      pv('2Gi'),
      { status: { capacity: { storage: '1Gi' }, allocatedResourceStatuses: { storage: 'NodeResizePending' } } },
      2 * 1024 ** 3,
    ],
    [
      'a node expansion that failed is tried again',
      pv('2Gi'),
      { status: { capacity: { storage: '1Gi' }, allocatedResourceStatuses: { storage: 'NodeResizeInProgress' } } },
      2 * 1024 ** 3,
    ],
    [
      'an infeasible one is not',
      pv('2Gi'),
      { status: { capacity: { storage: '1Gi' }, allocatedResourceStatuses: { storage: 'NodeResizeInfeasible' } } },
      undefined,
    ],
    [
      'the controller is still at it',
      pv('2Gi'),
      {
        status: { capacity: { storage: '1Gi' }, allocatedResourceStatuses: { storage: 'ControllerResizeInProgress' } },
      },
      undefined,
    ],
    ['already expanded', pv('2Gi'), { status: { capacity: { storage: '2048Mi' } } }, undefined],
    ['no status capacity yet', pv('2Gi'), { status: {} }, undefined],
  ])('%s', (_n, v, claim, bytes) => {
    expect(needsNodeExpansion(v, claim)?.bytes).toBe(bytes);
  });
});

describe('failedExpansionStatus (upstream MarkNodeExpansionInfeasible / MarkNodeExpansionFailedCondition)', () => {
  const status = {
    capacity: { storage: '1Gi' },
    allocatedResourceStatuses: { storage: 'NodeResizeInProgress' },
    conditions: [{ type: 'FileSystemResizePending' }],
  };
  it('an infeasible error marks the claim NodeResizeInfeasible with a NodeResizeError condition; a final one the condition; an uncertain one nothing', () => {
    expect(
      failedExpansionStatus(status, new GoStatusError(11, 'rpc error: code = OutOfRange desc = too big'), 't'),
    ).toEqual({
      conditions: [
        { type: 'FileSystemResizePending' },
        {
          type: 'NodeResizeError',
          status: 'True',
          lastTransitionTime: 't',
          message:
            'failed to expand pvc with Expander.NodeExpand failed to expand the volume rpc error: code = OutOfRange desc = too big',
        },
      ],
      allocatedResourceStatuses: { storage: 'NodeResizeInfeasible' },
    });
    expect(failedExpansionStatus(status, new GoStatusError(13, 'rpc error: code = Internal desc = x'), 't')).toEqual({
      conditions: [
        { type: 'FileSystemResizePending' },
        {
          type: 'NodeResizeError',
          status: 'True',
          lastTransitionTime: 't',
          message:
            'failed to expand pvc with Expander.NodeExpand failed to expand the volume : rpc error: code = Internal desc = x',
        },
      ],
    });
    expect(
      failedExpansionStatus(status, new GoStatusError(4, 'rpc error: code = DeadlineExceeded desc = x'), 't'),
    ).toBeUndefined();
    // A NodeResizeError already there stays as it was (upstream MergeResizeConditionOnPVC keeps an unchanged
    // condition).
    const earlier = {
      type: 'NodeResizeError',
      status: 'True',
      lastTransitionTime: 'before',
      message: 'failed to expand pvc with first',
    };
    expect(
      failedExpansionStatus({ ...status, conditions: [earlier] }, new GoStatusError(13, 'again'), 't')?.conditions,
    ).toEqual([earlier]);
  });
});
