/** Env from API objects and service links (upstream makeEnvironmentVariables / envvars.FromServices). */
import { describe, expect, it } from 'vitest';
import type { Container, Pod } from '../../../src/api/types.js';
import { containerEnv, type PodObjects } from '../../../src/agent/runtime/env.js';
import { serviceEnv, servicesForPod } from '../../../src/agent/runtime/service-env.js';
import { podReferences } from '../../../src/agent/objects/pod-objects.js';

const b64 = (s: string) => Buffer.from(s).toString('base64');
const objects: PodObjects = {
  configMaps: new Map([
    ['cm', { data: { color: 'blue', 'bad key': 'x', mode: 'fast' } }],
    ['gone', null],
  ]),
  secrets: new Map([['s', { data: { token: b64('t0k') } }]]),
  serviceEnv: { DB_SERVICE_HOST: '10.0.0.9', COLOR: 'from-service' },
};
const pod = (c: Partial<Container>): Pod => ({
  metadata: { name: 'p', namespace: 'ns', uid: 'u' },
  spec: { containers: [{ name: 'c', image: 'i', ...c }] },
});
const env = (c: Partial<Container>, o: PodObjects | null = objects) => {
  const p = pod(c);
  return containerEnv(p, p.spec.containers[0], { podIPs: [], hostIPs: [], nodeName: 'n', objects: o ?? undefined });
};

describe('env from API objects', () => {
  it('envFrom (prefix, invalid names skipped), then env overriding, then service links not already set', () => {
    const r = env({
      envFrom: [{ configMapRef: { name: 'cm' }, prefix: 'CM_' }, { secretRef: { name: 's' } }],
      env: [
        { name: 'CM_color', value: 'red' },
        { name: 'URL', value: 'http://$(DB_SERVICE_HOST)/$(token)' },
        { name: 'COLOR', valueFrom: { configMapKeyRef: { name: 'cm', key: 'color' } } },
      ],
    });
    expect(r).toEqual({
      ok: true,
      env: [
        { key: 'CM_mode', value: 'fast' },
        { key: 'token', value: 't0k' },
        { key: 'CM_color', value: 'red' },
        { key: 'URL', value: 'http://10.0.0.9/t0k' },
        { key: 'COLOR', value: 'blue' },
        { key: 'DB_SERVICE_HOST', value: '10.0.0.9' },
      ],
    });
  });
  it("a Secret's value that is not UTF-8 stays its bytes, from secretKeyRef and envFrom (upstream v1.36.2)", () => {
    const binary = Buffer.from([0xff, 0xfe, 0x41]);
    const o: PodObjects = { ...objects, secrets: new Map([['bin', { data: { raw: binary.toString('base64') } }]]) };
    const r = env(
      {
        envFrom: [{ secretRef: { name: 'bin' }, prefix: 'ALL_' }],
        env: [{ name: 'RAW', valueFrom: { secretKeyRef: { name: 'bin', key: 'raw' } } }],
      },
      o,
    );
    if (!r.ok) throw new Error(r.message);
    const values = new Map(r.env.map((e) => [e.key, e.value]));
    expect(Buffer.from(values.get('RAW') as Uint8Array)).toEqual(binary);
    expect(Buffer.from(values.get('ALL_raw') as Uint8Array)).toEqual(binary);
    // UTF-8 values stay text.
    expect(values.get('token')).toBeUndefined();
    const text = env({ envFrom: [{ secretRef: { name: 's' } }] });
    expect(text.ok && text.env[0]).toEqual({ key: 'token', value: 't0k' });
  });
  it("a ConfigMap's binaryData is no env source: only its data is (upstream makeEnvironmentVariables)", () => {
    const o: PodObjects = { ...objects, configMaps: new Map([['b', { data: {}, binaryData: { blob: 'AAE=' } }]]) };
    expect(env({ env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'b', key: 'blob' } } }] }, o)).toEqual({
      ok: false,
      message: "couldn't find key blob in ConfigMap ns/b",
    });
  });
  it('missing objects and keys: upstream messages; optional ones are skipped', () => {
    expect(env({ env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'gone', key: 'k' } } }] })).toEqual({
      ok: false,
      message: 'configmap "gone" not found',
    });
    expect(env({ env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 's', key: 'nope' } } }] })).toEqual({
      ok: false,
      message: "couldn't find key nope in Secret ns/s",
    });
    expect(
      env({ env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'gone', key: 'k', optional: true } } }] }),
    ).toMatchObject({ ok: true });
    expect(env({ envFrom: [{ secretRef: { name: 'absent' } }] })).toEqual({
      ok: false,
      message: 'secret "absent" not found',
    });
    expect(env({ envFrom: [{ secretRef: { name: 'absent', optional: true } }] })).toMatchObject({ ok: true });
    expect(env({ env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 's', key: 'token' } } }] }, null)).toEqual({
      ok: false,
      message: "couldn't get secret ns/s: no apiserver configured",
    });
  });
  it('collects the names a pod refers to', () => {
    const p = pod({
      envFrom: [{ configMapRef: { name: 'a' } }, { secretRef: { name: 'b' } }],
      env: [
        { name: 'x', valueFrom: { configMapKeyRef: { name: 'a', key: 'k' } } },
        { name: 'y', valueFrom: { secretKeyRef: { name: 'c', key: 'k' } } },
      ],
    });
    p.spec.imagePullSecrets = [{ name: 'regcred' }];
    expect(podReferences(p)).toEqual({ configMaps: ['a'], secrets: ['b', 'c'], pullSecrets: ['regcred'] });
  });
  it('collects the names the ephemeral containers refer to (regression: only init and regular containers)', () => {
    const p = pod({});
    p.spec.ephemeralContainers = [
      {
        name: 'debugger',
        image: 'busybox',
        envFrom: [{ secretRef: { name: 'debug-token' } }],
        env: [{ name: 'LEVEL', valueFrom: { configMapKeyRef: { name: 'debug-settings', key: 'level' } } }],
      },
    ];
    expect(podReferences(p)).toEqual({ configMaps: ['debug-settings'], secrets: ['debug-token'], pullSecrets: [] });
  });
});

describe('service links', () => {
  it('makes the upstream variables', () => {
    expect(
      serviceEnv([
        {
          metadata: { name: 'my-db' },
          spec: {
            clusterIP: '10.0.0.2',
            ports: [
              { name: 'pg', port: 5432 },
              { name: 'metrics-udp', port: 9000, protocol: 'UDP' },
            ],
          },
        },
        { metadata: { name: 'headless' }, spec: { clusterIP: 'None', ports: [{ port: 1 }] } },
      ]),
    ).toEqual({
      MY_DB_SERVICE_HOST: '10.0.0.2',
      MY_DB_SERVICE_PORT: '5432',
      MY_DB_SERVICE_PORT_PG: '5432',
      MY_DB_SERVICE_PORT_METRICS_UDP: '9000',
      MY_DB_PORT: 'tcp://10.0.0.2:5432',
      MY_DB_PORT_5432_TCP: 'tcp://10.0.0.2:5432',
      MY_DB_PORT_5432_TCP_PROTO: 'tcp',
      MY_DB_PORT_5432_TCP_PORT: '5432',
      MY_DB_PORT_5432_TCP_ADDR: '10.0.0.2',
      MY_DB_PORT_9000_UDP: 'udp://10.0.0.2:9000',
      MY_DB_PORT_9000_UDP_PROTO: 'udp',
      MY_DB_PORT_9000_UDP_PORT: '9000',
      MY_DB_PORT_9000_UDP_ADDR: '10.0.0.2',
    });
  });
  it("the kubernetes service always; the namespace's services only with enableServiceLinks", () => {
    const master = { metadata: { name: 'kubernetes', namespace: 'default' } };
    const svc = { metadata: { name: 'a', namespace: 'ns' } };
    expect(servicesForPod('ns', { enableServiceLinks: true, inNamespace: [svc], masterService: master })).toEqual([
      master,
      svc,
    ]);
    expect(servicesForPod('ns', { enableServiceLinks: false, inNamespace: [svc], masterService: master })).toEqual([
      master,
    ]);
    expect(
      servicesForPod('default', { enableServiceLinks: true, inNamespace: [master, svc], masterService: master }),
    ).toEqual([master, svc]);
  });
});
