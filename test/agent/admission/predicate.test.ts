/** Admission decisions (upstream predicate admit handler) as a table over one base pod and node. */
import { describe, expect, it } from 'vitest';
import type { Container, ContainerRestartRule, Pod } from '../../../src/api/types.js';
import { admitPod, podRequests, type AdmissionNode } from '../../../src/agent/admission/predicate.js';
import { isExtendedResource, podRequestOf } from '../../../src/agent/admission/extended-resources.js';
import { sameResources, withAdvertisedResources } from '../../../src/agent/nodestatus/advertised-resources.js';

const node: AdmissionNode = {
  name: 'n1',
  labels: { 'kubernetes.io/hostname': 'n1', zone: 'a', gen: '5' },
  taints: [{ key: 'dedicated', value: 'db', effect: 'NoExecute' }],
  allocatable: { cpuMilli: 2000, memoryBytes: 4 * 2 ** 30, pods: 3 },
};
const pod = (spec: Partial<Pod['spec']> = {}, req?: Record<string, string>): Pod => ({
  metadata: { name: 'p', namespace: 'default', uid: 'u' },
  spec: {
    nodeName: 'n1',
    tolerations: [{ operator: 'Exists' }],
    containers: [{ name: 'c', image: 'i', resources: req ? { requests: req } : {} }],
    ...spec,
  },
});
const withPorts = (ports: { containerPort: number; hostPort?: number; hostIP?: string; protocol?: string }[]): Pod => ({
  metadata: { name: 'p', namespace: 'default', uid: 'u' },
  spec: { nodeName: 'n1', tolerations: [{ operator: 'Exists' }], containers: [{ name: 'c', image: 'i', ports }] },
});
const affinity = (terms: unknown[]) => ({
  affinity: { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: terms } } },
});

describe('admitPod', () => {
  const cases: [
    string,
    Pod,
    Pod[],
    { isStatic?: boolean; isCritical?: boolean; allowedUnsafeSysctls?: string[] },
    string | undefined,
    string?,
  ][] = [
    [
      'safe sysctl',
      pod({ securityContext: { sysctls: [{ name: 'net.ipv4.tcp_syncookies', value: '1' }] } }),
      [],
      {},
      undefined,
    ],
    [
      'unsafe sysctl not allowed',
      pod({ securityContext: { sysctls: [{ name: 'kernel.msgmax', value: '1' }] } }),
      [],
      {},
      'SysctlForbidden',
      'forbidden sysctl: "kernel.msgmax" not allowlisted',
    ],
    [
      'unsafe sysctl allowed by a glob',
      pod({ securityContext: { sysctls: [{ name: 'kernel.msgmax', value: '1' }] } }),
      [],
      { allowedUnsafeSysctls: ['kernel.msg*'] },
      undefined,
    ],
    [
      'pod OS windows on a linux node',
      pod({ os: { name: 'windows' } }),
      [],
      {},
      'PodOSNotSupported',
      "Failed to admit pod as the OS field doesn't match node OS",
    ],
    ['pod OS linux', pod({ os: { name: 'linux' } }), [], {}, undefined],
    [
      'OS label mismatch (upstream reads the pod’s labels)',
      { ...pod(), metadata: { ...pod().metadata, labels: { 'kubernetes.io/os': 'windows' } } },
      [],
      {},
      'PodOSSelectorNodeLabelDoesNotMatch',
      "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label",
    ],
    [
      'OS node selector mismatch: a node affinity failure',
      pod({ nodeSelector: { 'kubernetes.io/os': 'windows' } }),
      [],
      {},
      'NodeAffinity',
      "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
    ],
    ['fits', pod({}, { cpu: '500m', memory: '1Gi' }), [pod({}, { cpu: '1' })], {}, undefined],
    [
      'other node name',
      pod({ nodeName: 'n2' }),
      [],
      {},
      'NodeName',
      "Predicate NodeName failed: node(s) didn't match the requested node name",
    ],
    ['node selector matches', pod({ nodeSelector: { zone: 'a' } }), [], {}, undefined],
    [
      'node selector mismatch',
      pod({ nodeSelector: { zone: 'b' } }),
      [],
      {},
      'NodeAffinity',
      "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector",
    ],
    [
      'affinity In',
      pod(affinity([{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a', 'b'] }] }])),
      [],
      {},
      undefined,
    ],
    [
      'affinity NotIn',
      pod(affinity([{ matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['a'] }] }])),
      [],
      {},
      'NodeAffinity',
    ],
    [
      'affinity Gt',
      pod(affinity([{ matchExpressions: [{ key: 'gen', operator: 'Gt', values: ['4'] }] }])),
      [],
      {},
      undefined,
    ],
    [
      'affinity DoesNotExist fails, second term ORed passes',
      pod(
        affinity([
          { matchExpressions: [{ key: 'zone', operator: 'DoesNotExist' }] },
          { matchFields: [{ key: 'metadata.name', operator: 'In', values: ['n1'] }] },
        ]),
      ),
      [],
      {},
      undefined,
    ],
    [
      'API pod without a toleration of a NoExecute taint',
      pod({ tolerations: [] }),
      [],
      {},
      'TaintToleration',
      "Predicate TaintToleration failed: node(s) had taints that the pod didn't tolerate",
    ],
    [
      'API pod tolerating the NoExecute taint',
      pod({ tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'db', effect: 'NoExecute' }] }),
      [],
      {},
      undefined,
    ],
    ['static pod: not checked against taints (upstream)', pod({ tolerations: [] }), [], { isStatic: true }, undefined],
    [
      'host port taken by an admitted pod (same protocol and port, 0.0.0.0)',
      withPorts([{ containerPort: 80, hostPort: 8080 }]),
      [withPorts([{ containerPort: 81, hostPort: 8080, hostIP: '10.0.0.1' }])],
      {},
      'NodePorts',
      "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports",
    ],
    [
      'host port free: other protocol or other IP',
      withPorts([{ containerPort: 80, hostPort: 8080, hostIP: '10.0.0.2' }]),
      [
        withPorts([{ containerPort: 80, hostPort: 8080, hostIP: '10.0.0.1' }]),
        withPorts([{ containerPort: 80, hostPort: 8080, protocol: 'UDP' }]),
      ],
      {},
      undefined,
    ],
    [
      'resources first: a pod short of cpu on another node is OutOfcpu',
      pod({ nodeName: 'n2' }, { cpu: '3' }),
      [],
      {},
      'OutOfcpu',
      "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000",
    ],
    [
      'a critical pod is answered by the failure preemption cannot mend',
      pod({ nodeName: 'n2' }, { cpu: '3' }),
      [],
      { isCritical: true },
      'NodeName',
      "Predicate NodeName failed: node(s) didn't match the requested node name",
    ],
    [
      'too many pods',
      pod(),
      [pod(), pod(), pod()],
      {},
      'OutOfpods',
      "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3",
    ],
    [
      'cpu',
      pod({}, { cpu: '1500m' }),
      [pod({}, { cpu: '1' })],
      {},
      'OutOfcpu',
      "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000",
    ],
    [
      'memory',
      pod({}, { memory: '3Gi' }),
      [pod({}, { memory: '2Gi' })],
      {},
      'OutOfmemory',
      `Node didn't have enough resource: memory, requested: ${3 * 2 ** 30}, used: ${2 * 2 ** 30}, capacity: ${4 * 2 ** 30}`,
    ],
    ['best-effort pod always fits resources', pod(), [pod({}, { cpu: '2' })], {}, undefined],
  ];
  for (const [name, p, admitted, o, reason, message] of cases) {
    it(name, () => {
      const r = admitPod(p, admitted, {
        node,
        isStatic: !!o.isStatic,
        isCritical: o.isCritical,
        allowedUnsafeSysctls: o.allowedUnsafeSysctls,
      });
      if (!reason) expect(r).toEqual({ admit: true });
      else expect(r).toMatchObject({ admit: false, reason, message: message ?? expect.any(String) });
    });
  }
  it('counts init containers as the max, sidecars and overhead as additions', () => {
    const p = pod(
      {
        initContainers: [
          { name: 'i', image: 'x', resources: { requests: { cpu: '3' } } },
          { name: 's', image: 'x', restartPolicy: 'Always', resources: { requests: { cpu: '200m' } } },
        ],
        overhead: { cpu: '50m' },
      },
      { cpu: '1' },
    );
    expect(podRequests(p).cpuMilli).toBe(3000 + 50);
  });
});

describe('AppArmor admission', () => {
  const noAppArmor = { ...node, appArmorEnabled: false };
  const verdict = (p: Pod, n: AdmissionNode = noAppArmor) => admitPod(p, [], { node: n, isStatic: false });
  const refused = {
    admit: false,
    reason: 'AppArmor',
    message: 'Cannot enforce AppArmor: AppArmor is not enabled on the host',
  };
  it('refuses a pod that asks for a profile when the kernel enforces none, by field or beta annotation', () => {
    expect(verdict(pod({ securityContext: { appArmorProfile: { type: 'RuntimeDefault' } } }))).toEqual(refused);
    const c = pod();
    c.spec.containers[0].securityContext = { appArmorProfile: { type: 'Localhost', localhostProfile: 'x' } };
    expect(verdict(c)).toEqual(refused);
    const a = pod();
    a.metadata.annotations = { 'container.apparmor.security.beta.kubernetes.io/c': 'runtime/default' };
    expect(verdict(a)).toEqual(refused);
  });
  it('admits Unconfined, no profile, or a host that enforces AppArmor', () => {
    expect(verdict(pod({ securityContext: { appArmorProfile: { type: 'Unconfined' } } }))).toEqual({ admit: true });
    expect(verdict(pod())).toEqual({ admit: true });
    expect(
      verdict(pod({ securityContext: { appArmorProfile: { type: 'RuntimeDefault' } } }), {
        ...node,
        appArmorEnabled: true,
      }),
    ).toEqual({ admit: true });
  });
});

describe('declared features admission (NodeDeclaredFeatures)', () => {
  const restartAll: ContainerRestartRule = {
    action: 'RestartAllContainers',
    exitCodes: { operator: 'In', values: [42] },
  };
  const withRule = (where: 'containers' | 'initContainers'): Pod => {
    const p = pod();
    const container: Container = { name: where, image: 'i', restartPolicy: 'Never', restartPolicyRules: [restartAll] };
    if (where === 'containers') p.spec.containers = [container];
    else p.spec.initContainers = [container];
    return p;
  };
  const verdict = (p: Pod, declaredFeatures?: string[]) =>
    admitPod(p, [], { node: { ...node, declaredFeatures }, isStatic: false });
  const declaredWithout = ['ExtendWebSocketsToKubelet', 'InPlacePodLevelResourcesVerticalScaling'];

  it("refuses a pod with a RestartAllContainers rule on a node that does not declare the feature, as upstream's handler", () => {
    for (const where of ['containers', 'initContainers'] as const)
      expect(verdict(withRule(where), declaredWithout)).toEqual({
        admit: false,
        reason: 'PodFeatureUnsupported',
        message: 'Pod requires node features that are not available: RestartAllContainersOnContainerExits',
      });
  });
  it('admits it where the feature is declared, and any pod while NodeDeclaredFeatures is off', () => {
    expect(verdict(withRule('containers'), [...declaredWithout, 'RestartAllContainersOnContainerExits'])).toEqual({
      admit: true,
    });
    expect(verdict(withRule('containers'), undefined)).toEqual({ admit: true });
  });
  it('a pod that needs no declared feature is admitted by a node that declares none', () => {
    const p = pod();
    p.spec.containers[0] = { ...p.spec.containers[0], restartPolicy: 'Never', restartPolicyRules: [] };
    expect(verdict(p, [])).toEqual({ admit: true });
  });
});

describe('extended resources (upstream: checked when the Node advertises them, else a cluster-level resource)', () => {
  const dongleNode: AdmissionNode = { ...node, extended: { 'example.com/dongle': 4 } };
  const wants = (n: string, resource = 'example.com/dongle') => pod({}, { [resource]: n });

  it('counts what the admitted pods request against the allocatable; the refusal is upstream’s, and lists the shortfall a critical pod may preempt for', () => {
    expect(admitPod(wants('3'), [], { node: dongleNode, isStatic: false })).toEqual({ admit: true });
    const short = [{ resource: 'example.com/dongle', requested: 2, used: 3, capacity: 4 }];
    expect(admitPod(wants('2'), [wants('3')], { node: dongleNode, isStatic: false })).toEqual({
      admit: false,
      reason: 'OutOfexample.com/dongle',
      message: "Node didn't have enough resource: example.com/dongle, requested: 2, used: 3, capacity: 4",
      shortfalls: short,
    });
    expect(admitPod(wants('2'), [wants('3')], { node: dongleNode, isStatic: true, isCritical: true })).toMatchObject({
      admit: false,
      reason: 'OutOfexample.com/dongle',
      shortfalls: short,
    });
  });

  it('a resource the node does not advertise, or a native one under kubernetes.io/, is not checked here', () => {
    expect(admitPod(wants('9', 'example.com/license'), [], { node: dongleNode, isStatic: false })).toEqual({
      admit: true,
    });
    expect(admitPod(wants('9'), [], { node, isStatic: false })).toEqual({ admit: true });
    expect(isExtendedResource('example.com/dongle')).toBe(true);
    expect(isExtendedResource('hugepages-2Mi')).toBe(false);
    expect(isExtendedResource('kubernetes.io/batch-cpu')).toBe(false);
    expect(isExtendedResource('requests.example.com/dongle')).toBe(false);
  });

  it('huge pages are checked against the node’s pools, always: a size the machine lacks has none (OutOfhugepages-1Gi)', () => {
    const hugeNode: AdmissionNode = { ...node, hugePages: { 'hugepages-2Mi': 64 * 2 ** 20 } };
    expect(
      admitPod(wants('32Mi', 'hugepages-2Mi'), [wants('32Mi', 'hugepages-2Mi')], { node: hugeNode, isStatic: false }),
    ).toEqual({ admit: true });
    expect(
      admitPod(wants('64Mi', 'hugepages-2Mi'), [wants('32Mi', 'hugepages-2Mi')], { node: hugeNode, isStatic: false }),
    ).toEqual({
      admit: false,
      reason: 'OutOfhugepages-2Mi',
      message: `Node didn't have enough resource: hugepages-2Mi, requested: ${64 * 2 ** 20}, used: ${32 * 2 ** 20}, capacity: ${64 * 2 ** 20}`,
      shortfalls: [{ resource: 'hugepages-2Mi', requested: 64 * 2 ** 20, used: 32 * 2 ** 20, capacity: 64 * 2 ** 20 }],
    });
    expect(admitPod(wants('1Gi', 'hugepages-1Gi'), [], { node: hugeNode, isStatic: false })).toMatchObject({
      admit: false,
      reason: 'OutOfhugepages-1Gi',
    });
  });

  it('a pod’s request is max(containers and sidecars, largest init container) + overhead', () => {
    const p: Pod = {
      metadata: { name: 'p', namespace: 'default', uid: 'u' },
      spec: {
        containers: [{ name: 'a', image: 'i', resources: { requests: { 'example.com/dongle': '1' } } }],
        initContainers: [
          { name: 'init', image: 'i', resources: { requests: { 'example.com/dongle': '3' } } },
          { name: 'side', image: 'i', restartPolicy: 'Always', resources: { requests: { 'example.com/dongle': '1' } } },
        ],
        overhead: { 'example.com/dongle': '1' },
      },
    } as Pod;
    expect(podRequestOf(p, 'example.com/dongle')).toBe(4);
  });
});

describe('withAdvertisedResources (upstream MachineInfo setter)', () => {
  it('keeps what others put in capacity, makes it allocatable, lets the kubelet’s own figures win, and drops an extended resource gone from capacity', () => {
    const mine = {
      capacity: { cpu: '2', memory: '4Gi', pods: '110' },
      allocatable: { cpu: '1900m', memory: '3Gi', pods: '110' },
    };
    const api = {
      capacity: { cpu: '8', 'example.com/dongle': '4' },
      allocatable: { cpu: '8', 'example.com/old': '1' },
    };
    expect(withAdvertisedResources(api, mine)).toEqual({
      capacity: { cpu: '2', memory: '4Gi', pods: '110', 'example.com/dongle': '4' },
      allocatable: { cpu: '1900m', memory: '3Gi', pods: '110', 'example.com/dongle': '4' },
    });
    expect(withAdvertisedResources({}, mine)).toEqual(mine);
  });

  it('drops a huge page size the node no longer has, as upstream at registration (reconcileHugePageResource)', () => {
    const api = { capacity: { cpu: '2', 'hugepages-1Gi': '2Gi', 'hugepages-2Mi': '0', 'example.com/dongle': '1' } };
    const mine = {
      capacity: { cpu: '2', 'hugepages-2Mi': '64Mi' },
      allocatable: { cpu: '2', 'hugepages-2Mi': '64Mi' },
    };
    expect(withAdvertisedResources(api, mine)).toEqual({
      capacity: { cpu: '2', 'hugepages-2Mi': '64Mi', 'example.com/dongle': '1' },
      allocatable: { cpu: '2', 'hugepages-2Mi': '64Mi', 'example.com/dongle': '1' },
    });
  });

  it('drops a device plugin resource removed after its grace period, which the apiserver still has', () => {
    const api = { capacity: { cpu: '2', 'example.com/widget': '4', 'example.com/dongle': '1' } };
    const mine = { capacity: { cpu: '2' }, allocatable: { cpu: '2' } };
    expect(withAdvertisedResources(api, mine, ['example.com/widget'])).toEqual({
      capacity: { cpu: '2', 'example.com/dongle': '1' },
      allocatable: { cpu: '2', 'example.com/dongle': '1' },
    });
  });
});

describe('what admission computes per pod, once per spec', () => {
  it('an updated pod (a new spec object) is counted with its new requests; the same spec gives the same answer', () => {
    const a = pod({}, { cpu: '1500m' });
    expect(podRequests(a)).toEqual({ cpuMilli: 1500, memoryBytes: 0 });
    expect(podRequests(a)).toBe(podRequests({ ...a, metadata: { ...a.metadata, name: 'renamed' } }));
    const resized = pod({}, { cpu: '250m', memory: '1Gi' });
    expect(podRequests(resized)).toEqual({ cpuMilli: 250, memoryBytes: 2 ** 30 });
    // 1500m of 2000 admitted: 600m does not fit next to `a`, but does next to it resized to 250m
    expect(admitPod(pod({}, { cpu: '600m' }), [a], { node, isStatic: true })).toMatchObject({
      admit: false,
      reason: 'OutOfcpu',
    });
    expect(admitPod(pod({}, { cpu: '600m' }), [resized], { node, isStatic: true })).toEqual({ admit: true });
  });
  it('host ports are read from each admitted pod spec as it is', () => {
    const taken = withPorts([{ containerPort: 80, hostPort: 8080 }]);
    expect(
      admitPod(withPorts([{ containerPort: 80, hostPort: 8080 }]), [taken], { node, isStatic: true }),
    ).toMatchObject({
      admit: false,
      reason: 'NodePorts',
    });
    expect(
      admitPod(
        withPorts([{ containerPort: 80, hostPort: 8080 }]),
        [withPorts([{ containerPort: 80, hostPort: 9090 }])],
        { node, isStatic: true },
      ),
    ).toEqual({
      admit: true,
    });
  });
});

describe('sameResources (upstream nodeStatusHasChanged, semantic equality)', () => {
  it('compares quantities by value, not spelling; a resource more, less or of another value differs', () => {
    const sent = { cpu: '2000m', memory: '4194304Ki', 'ephemeral-storage': '53687091200', pods: '110' };
    const stored = { cpu: '2', memory: '4Gi', 'ephemeral-storage': '50Gi', pods: '110' };
    expect(sameResources(sent, stored)).toBe(true);
    expect(sameResources(undefined, {})).toBe(true);
    expect(sameResources(sent, { ...stored, memory: '3Gi' })).toBe(false);
    expect(sameResources(sent, { ...stored, 'example.com/dongle': '1' })).toBe(false);
    const { pods: _pods, ...fewer } = stored;
    expect(sameResources(sent, { ...fewer, 'example.com/dongle': '110' })).toBe(false);
    expect(sameResources({ x: 'not a quantity' }, { x: 'not a quantity' })).toBe(true);
    expect(sameResources({ x: 'not a quantity' }, { x: 'another' })).toBe(false);
  });
});
