/**
 * The volume behaviours every runtime must show, run against a kubelet joined to the fake
 * apiserver (see volumes.test.ts for the process runtime, test/integration/containerd-volumes.test.ts
 * for containerd): ConfigMap, secret, projected (TokenRequest token, kube-root-ca.crt, namespace),
 * downwardAPI, emptyDir (disk and tmpfs), hostPath type checks, PVCs, subPath checks, FailedMount
 * events and clean-up.
 */
import { describe, expect, it } from 'vitest';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { boundPod, type Cluster } from './cluster-helpers.js';
import { httpGet, until } from './helpers.js';
import { createBoundClaim } from '../fixtures/apiserver/bound-claim.js';
import { createCertificate, newKeyPem } from '../../src/lib/x509.js';
import { startPodCertificateSigner } from '../fixtures/apiserver/pod-certificate-signer.js';
import { createPublicKey, X509Certificate, type KeyObject } from 'node:crypto';

type Obj = Record<string, any>;

/** What the cases need: the cluster, the node name, the test dir (root and logs under it), the busybox image. */
export interface VolumeCaseContext {
  c: Cluster;
  node: string;
  dir: string;
  image: string;
}

/** Registers the shared volume cases under `title`. */
export function describeVolumeCases(title: string, get: () => VolumeCaseContext): void {
  const ctx = () => get();
  const pod = (name: string) => ctx().c.api.store.get('pods', 'default', name) as Obj | undefined;
  const create = (obj: Obj, resource = 'pods') => ctx().c.api.store.create(resource, structuredClone(obj));
  const update = (resource: string, name: string, fn: (o: Obj) => void, ns = 'default') => {
    const o = structuredClone(ctx().c.api.store.get(resource, ns, name)!);
    fn(o);
    return ctx().c.api.store.update(resource, o);
  };
  const logOf = (name: string, container = 'main') => {
    const p = pod(name);
    if (!p) return '';
    const d = join(ctx().dir, 'logs', `default_${name}_${p.metadata.uid}`, container);
    return existsSync(d)
      ? readdirSync(d)
          .map((f) => readFileSync(join(d, f), 'utf8'))
          .join('')
          .split('\n')
          .map((l) => l.split(' ').slice(3).join(' '))
          .join('\n')
      : '';
  };
  const running = (name: string) =>
    pod(name)?.status?.phase === 'Running' &&
    (pod(name)?.status?.containerStatuses ?? []).every((s: Obj) => s.state?.running);
  /** The waiting state of a pod's first container once it is CreateContainerConfigError. */
  const configError = (name: string, what: string) =>
    until(
      () => {
        const w = pod(name)?.status?.containerStatuses?.[0]?.state?.waiting;
        return w?.reason === 'CreateContainerConfigError' && w;
      },
      20_000,
      what,
    );
  const events = (name: string) =>
    ctx().c.api.store.list('events', (e: Obj) => e.involvedObject?.name === name) as Obj[];
  const bound = (name: string, spec: Obj) => {
    const p = boundPod(name, ctx().node, spec) as Obj;
    for (const k of ['containers', 'initContainers']) for (const x of p.spec[k] ?? []) x.image = ctx().image;
    return p;
  };
  const withVolumes = (name: string, o: { command: string; mounts: Obj[]; volumes: Obj[]; extra?: Obj }) =>
    bound(name, {
      containers: [{ name: 'main', image: 'busybox', command: ['sh', '-c', o.command], volumeMounts: o.mounts }],
      volumes: o.volumes,
      ...o.extra,
    });

  describe(title, () => {
    it('a configMap key is a file; an update in the API reaches the running container without a restart', async () => {
      create(
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'app', namespace: 'default' },
          data: { color: 'blue' },
          binaryData: { bin: Buffer.from([1, 2, 3]).toString('base64') },
        },
        'configmaps',
      );
      create(
        withVolumes('cm', {
          command:
            'od -An -tx1 /etc/config/bin; touch /etc/config/x 2>&1 | grep -o "Read-only file system"; while true; do echo "color=$(cat /etc/config/color)"; sleep 0.3; done',
          mounts: [{ name: 'config', mountPath: '/etc/config' }],
          volumes: [{ name: 'config', configMap: { name: 'app' } }],
        }),
      );
      await until(() => logOf('cm').includes('color=blue'), 20_000, 'configMap file read');
      expect(logOf('cm')).toContain('01 02 03');
      expect(logOf('cm')).toContain('Read-only file system');
      update('configmaps', 'app', (o) => {
        o.data.color = 'green';
      });
      await until(() => logOf('cm').includes('color=green'), 20_000, 'update propagated');
      expect(pod('cm')!.status.containerStatuses[0].restartCount).toBe(0);
      const volDir = join(
        ctx().dir,
        'root',
        'pods',
        pod('cm')!.metadata.uid,
        'volumes',
        'kubernetes.io~configmap',
        'config',
      );
      expect(readdirSync(volDir).filter((f) => f.startsWith('..20'))).toHaveLength(1);
    }, 60_000);

    it('secret items with modes and fsGroup ownership; defaultMode', async () => {
      create(
        {
          apiVersion: 'v1',
          kind: 'Secret',
          metadata: { name: 'creds', namespace: 'default' },
          data: { pw: Buffer.from('s3cret').toString('base64'), user: Buffer.from('me').toString('base64') },
        },
        'secrets',
      );
      create(
        withVolumes('sec', {
          command:
            'cat /s/dir/pw; echo; stat -L -c "pw %a %g" /s/dir/pw; stat -L -c "def %a %g" /d/user; ls /s | tr "\\n" " "; echo; sleep 3600',
          mounts: [
            { name: 's', mountPath: '/s' },
            { name: 'd', mountPath: '/d' },
          ],
          volumes: [
            { name: 's', secret: { secretName: 'creds', items: [{ key: 'pw', path: 'dir/pw', mode: 0o400 }] } },
            { name: 'd', secret: { secretName: 'creds', defaultMode: 0o600 } },
          ],
          extra: { securityContext: { fsGroup: 2345 } },
        }),
      );
      await until(() => /^dir $/m.test(logOf('sec')), 20_000, 'secret stat and listing');
      const log = logOf('sec');
      expect(log).toContain('s3cret');
      expect(log).toContain('pw 440 2345');
      expect(log).toContain('def 640 2345');
      expect(log).toMatch(/^dir $/m);
      const uid = pod('sec')!.metadata.uid;
      expect(readFileSync('/proc/self/mountinfo', 'utf8')).toContain(`${uid}/volumes/kubernetes.io~secret/s`);
    }, 40_000);

    it('the default projected service-account volume: a TokenRequest token, ca.crt and namespace', async () => {
      create(
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'kube-root-ca.crt', namespace: 'default' },
          data: { 'ca.crt': ctx().c.ca.cert },
        },
        'configmaps',
      );
      const mountPath = '/var/run/secrets/kubernetes.io/serviceaccount';
      create(
        withVolumes('sa', {
          command: `echo "ns=$(cat ${mountPath}/namespace)"; echo "token=$(cat ${mountPath}/token)"; head -1 ${mountPath}/ca.crt; echo aud-token=$(cat /aud/t); sleep 3600`,
          mounts: [
            { name: 'kube-api-access-x1', mountPath, readOnly: true },
            { name: 'aud', mountPath: '/aud' },
          ],
          volumes: [
            {
              name: 'kube-api-access-x1',
              projected: {
                defaultMode: 420,
                sources: [
                  { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
                  { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
                  {
                    downwardAPI: {
                      items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }],
                    },
                  },
                ],
              },
            },
            {
              name: 'aud',
              projected: {
                sources: [{ serviceAccountToken: { audience: 'vault', expirationSeconds: 7200, path: 't' } }],
              },
            },
          ],
        }),
      );
      await until(() => logOf('sa').includes('aud-token='), 20_000, 'projected files read');
      const log = logOf('sa');
      expect(log).toContain('ns=default');
      expect(log).toContain('-----BEGIN CERTIFICATE-----');
      const token = /token=(\S+)/.exec(log)![1];
      const issued = ctx().c.api.issuedTokens.find((t) => t.token === token)!;
      expect(issued).toMatchObject({
        namespace: 'default',
        serviceAccount: 'default',
        expirationSeconds: 3607,
        boundObjectRef: { kind: 'Pod', name: 'sa', uid: pod('sa')!.metadata.uid },
      });
      const aud = ctx().c.api.issuedTokens.find((t) => t.token === /aud-token=(\S+)/.exec(log)![1])!;
      expect(aud).toMatchObject({ audiences: ['vault'], expirationSeconds: 7200 });
      // The container's status lists its mounts as upstream 1.32 does (RecursiveReadOnlyMounts): neither runtime here
      // makes recursive read-only ones.
      expect(pod('sa')!.status.containerStatuses[0].volumeMounts).toEqual([
        { name: 'kube-api-access-x1', mountPath, readOnly: true, recursiveReadOnly: 'Disabled' },
        { name: 'aud', mountPath: '/aud' },
      ]);
    }, 40_000);

    it("recursiveReadOnly: Enabled on a runtime that cannot is CreateContainerConfigError with upstream's message; IfPossible runs read-only", async () => {
      const mounts = (mode: string) => [{ name: 'e', mountPath: '/ro', readOnly: true, recursiveReadOnly: mode }];
      create(
        withVolumes('rro-on', {
          command: 'sleep 3600',
          mounts: mounts('Enabled'),
          volumes: [{ name: 'e', emptyDir: {} }],
        }),
      );
      create(
        withVolumes('rro-maybe', {
          command: 'touch /ro/x 2>&1 | grep -o "Read-only file system"; sleep 3600',
          mounts: mounts('IfPossible'),
          volumes: [{ name: 'e', emptyDir: {} }],
        }),
      );
      const waiting = await configError('rro-on', 'rro-on refused');
      expect(waiting.message).toBe(
        'failed to resolve recursive read-only mode: volume "e" requested recursive read-only mode, but it is not supported by the runtime',
      );
      await until(
        () => running('rro-maybe') && logOf('rro-maybe').includes('Read-only file system'),
        20_000,
        'rro-maybe read-only',
      );
      expect(pod('rro-maybe')!.status.containerStatuses[0].volumeMounts).toEqual([
        { name: 'e', mountPath: '/ro', readOnly: true, recursiveReadOnly: 'Disabled' },
      ]);
    }, 40_000);

    it('downwardAPI labels and annotations follow changes in the API', async () => {
      create(
        withVolumes('dapi', {
          command: 'while true; do echo "labels=$(tr "\\n" "," < /info/labels) cpu=$(cat /info/cpu)"; sleep 0.3; done',
          mounts: [{ name: 'info', mountPath: '/info' }],
          volumes: [
            {
              name: 'info',
              downwardAPI: {
                items: [
                  { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
                  { path: 'annotations', fieldRef: { fieldPath: 'metadata.annotations' } },
                  { path: 'cpu', resourceFieldRef: { containerName: 'main', resource: 'limits.cpu', divisor: '1m' } },
                ],
              },
            },
          ],
        }),
      );
      update('pods', 'dapi', (o) => {
        o.metadata.labels = { tier: 'web' };
      });
      await until(() => logOf('dapi').includes('labels=tier="web"'), 20_000, 'labels file');
      expect(logOf('dapi')).toMatch(/cpu=[1-9]\d*000/);
      update('pods', 'dapi', (o) => {
        o.metadata.labels = { tier: 'db', zone: 'a b' };
      });
      await until(() => logOf('dapi').includes('labels=tier="db",zone="a b"'), 20_000, 'labels update propagated');
    }, 50_000);

    it('an emptyDir is shared by an init container and two containers; medium Memory is a tmpfs', async () => {
      create(
        bound('shared', {
          initContainers: [
            {
              name: 'init',
              image: 'busybox',
              command: ['sh', '-c', 'echo from-init > /work/seed'],
              volumeMounts: [{ name: 'work', mountPath: '/work' }],
            },
          ],
          containers: [
            {
              name: 'main',
              image: 'busybox',
              command: [
                'sh',
                '-c',
                'cat /work/seed; echo from-main > /work/main; grep " /mem " /proc/mounts; sleep 3600',
              ],
              volumeMounts: [
                { name: 'work', mountPath: '/work' },
                { name: 'mem', mountPath: '/mem' },
              ],
            },
            {
              name: 'other',
              image: 'busybox',
              command: [
                'sh',
                '-c',
                'until [ -f /w2/main ]; do sleep 0.2; done; echo "other sees $(cat /w2/main)"; sleep 3600',
              ],
              volumeMounts: [{ name: 'work', mountPath: '/w2' }],
            },
          ],
          volumes: [
            { name: 'work', emptyDir: {} },
            { name: 'mem', emptyDir: { medium: 'Memory', sizeLimit: '16Mi' } },
          ],
        }),
      );
      await until(() => logOf('shared', 'other').includes('other sees from-main'), 20_000, 'shared emptyDir');
      await until(() => logOf('shared').includes('tmpfs /mem'), 20_000, 'main container output');
      expect(logOf('shared')).toContain('from-init');
      expect(logOf('shared')).toMatch(/tmpfs \/mem tmpfs rw.*size=16384k/);
    }, 40_000);

    it('hostPath type checks fail with FailedMount events; DirectoryOrCreate creates', async () => {
      const base = join(ctx().dir, 'host');
      mkdirSync(base);
      writeFileSync(join(base, 'file'), 'x');
      create(
        withVolumes('hp-bad', {
          command: 'sleep 3600',
          mounts: [{ name: 'h', mountPath: '/h' }],
          volumes: [{ name: 'h', hostPath: { path: join(base, 'file'), type: 'Directory' } }],
        }),
      );
      create(
        withVolumes('hp-sock', {
          command: 'sleep 3600',
          mounts: [{ name: 'h', mountPath: '/h' }],
          volumes: [{ name: 'h', hostPath: { path: join(base, 'file'), type: 'Socket' } }],
        }),
      );
      create(
        withVolumes('hp-ok', {
          command: 'ls -d /h && sleep 3600',
          mounts: [{ name: 'h', mountPath: '/h' }],
          volumes: [{ name: 'h', hostPath: { path: join(base, 'new', 'dir'), type: 'DirectoryOrCreate' } }],
        }),
      );
      const bad = await until(
        () => events('hp-bad').find((e) => e.reason === 'FailedMount'),
        20_000,
        'FailedMount event',
      );
      expect(bad).toMatchObject({
        type: 'Warning',
        message: `MountVolume.SetUp failed for volume "h" : hostPath type check failed: ${join(base, 'file')} is not a directory`,
      });
      const sock = await until(
        () => events('hp-sock').find((e) => e.reason === 'FailedMount'),
        20_000,
        'FailedMount event',
      );
      expect(sock.message).toBe(
        `MountVolume.SetUp failed for volume "h" : hostPath type check failed: ${join(base, 'file')} is not a socket file`,
      );
      expect(pod('hp-bad')!.status.containerStatuses[0].state.waiting.reason).toBe('ContainerCreating');
      await until(() => running('hp-ok'), 20_000, 'DirectoryOrCreate pod runs');
      expect(existsSync(join(base, 'new', 'dir'))).toBe(true);
    }, 40_000);

    it('a missing non-optional configMap keeps the pod in ContainerCreating until it is created; optional ones do not', async () => {
      create(
        withVolumes('late', {
          command: 'cat /c/k; echo; ls /opt-c | wc -l; sleep 3600',
          mounts: [
            { name: 'c', mountPath: '/c' },
            { name: 'o', mountPath: '/opt-c' },
          ],
          volumes: [
            { name: 'c', configMap: { name: 'late-cm' } },
            { name: 'o', configMap: { name: 'never', optional: true } },
          ],
        }),
      );
      const ev = await until(() => events('late').find((e) => e.reason === 'FailedMount'), 20_000, 'FailedMount');
      expect(ev.message).toBe('MountVolume.SetUp failed for volume "c" : configmap "late-cm" not found');
      await new Promise((r) => setTimeout(r, 1500));
      expect(pod('late')!.status.phase).toBe('Pending');
      expect(pod('late')!.status.containerStatuses[0].state.waiting.reason).toBe('ContainerCreating');
      create(
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'late-cm', namespace: 'default' },
          data: { k: 'arrived' },
        },
        'configmaps',
      );
      await until(() => running('late'), 30_000, 'pod runs after the configMap exists');
      await until(() => logOf('late').includes('arrived'), 10_000, 'file read');
    }, 60_000);

    it('projected clusterTrustBundle sources: by name, by signer and selector, optional; changes follow', async () => {
      const now = Date.now();
      const validity = { notBefore: new Date(now - 60_000), notAfter: new Date(now + 3_600_000) };
      const issuerCa = await createCertificate({
        subject: { cn: 'issuer-ca' },
        key: { privateKeyPem: await newKeyPem() },
        usage: 'ca',
        ...validity,
      });
      const bundles = 'certificates.k8s.io/clustertrustbundles';
      create({ metadata: { name: 'cluster-ca' }, spec: { trustBundle: ctx().c.ca.cert } }, bundles);
      create(
        {
          metadata: { name: 'example.com:issuer:1', labels: { trust: 'yes' } },
          spec: { signerName: 'example.com/issuer', trustBundle: issuerCa },
        },
        bundles,
      );
      const count = (file: string) => `$(grep -c BEGIN /ctb/${file} || true)`;
      create(
        withVolumes('ctb', {
          command: `while true; do echo "name=${count('name.pem')} signer=${count('signer.pem')} optional=$(wc -c < /ctb/optional.pem)"; sleep 1; done`,
          mounts: [{ name: 'ctb', mountPath: '/ctb' }],
          volumes: [
            {
              name: 'ctb',
              projected: {
                sources: [
                  { clusterTrustBundle: { name: 'cluster-ca', path: 'name.pem' } },
                  {
                    clusterTrustBundle: {
                      signerName: 'example.com/issuer',
                      labelSelector: { matchLabels: { trust: 'yes' } },
                      path: 'signer.pem',
                    },
                  },
                  { clusterTrustBundle: { name: 'absent', optional: true, path: 'optional.pem' } },
                ],
              },
            },
          ],
        }),
      );
      await until(() => logOf('ctb').includes('name=1 signer=1 optional=0'), 30_000, 'the bundles read');
      const uid = pod('ctb')!.metadata.uid;
      const volume = join(ctx().dir, 'root', 'pods', uid, 'volumes', 'kubernetes.io~projected', 'ctb');
      expect(readFileSync(join(volume, 'signer.pem'), 'utf8')).toBe(issuerCa);
      expect(statSync(join(volume, 'signer.pem')).mode & 0o777).toBe(0o644);
      // A second certificate in the named bundle reaches the running container at a later sync.
      update(bundles, 'cluster-ca', (b) => (b.spec.trustBundle = `${b.spec.trustBundle}${issuerCa}`), '');
      await until(() => logOf('ctb').includes('name=2 signer=1'), 20_000, 'the updated bundle');
      // A bundle that is not there and not optional fails the volume with upstream's message.
      create(
        withVolumes('ctb-missing', {
          command: 'sleep 3600',
          mounts: [{ name: 'ctb', mountPath: '/ctb' }],
          volumes: [
            { name: 'ctb', projected: { sources: [{ clusterTrustBundle: { name: 'missing', path: 'ca.pem' } }] } },
          ],
        }),
      );
      const failed = await until(
        () => events('ctb-missing').find((e) => e.reason === 'FailedMount'),
        20_000,
        'FailedMount',
      );
      expect(failed.message).toBe(
        'MountVolume.SetUp failed for volume "ctb" : while getting ClusterTrustBundle: clustertrustbundle.certificates.k8s.io "missing" not found',
      );
    }, 60_000);

    it('projected podCertificate sources: a key, a PodCertificateRequest, the issued chain; refreshed; a denial', async () => {
      if (!ctx().c.api.store.get('serviceaccounts', 'default', 'default'))
        create({ metadata: { name: 'default', namespace: 'default' } }, 'serviceaccounts');
      // The first certificate is due for refresh at once; the next one is not.
      const signer = startPodCertificateSigner(ctx().c.api, 'example.com/pods', {
        beginRefreshAt: (_request, index) => (index === 0 ? Date.now() - 600_000 : Date.now() + 3_600_000),
      });
      const refuser = startPodCertificateSigner(ctx().c.api, 'example.com/refuses', {
        decide: () => ({ deny: ['NotAllowed', 'not for this pod'] }),
      });
      try {
        create(
          withVolumes('pcert', {
            command: 'while true; do echo "bundle=$(grep -c BEGIN /creds/bundle.pem)"; sleep 1; done',
            mounts: [{ name: 'creds', mountPath: '/creds' }],
            volumes: [
              {
                name: 'creds',
                projected: {
                  sources: [
                    {
                      podCertificate: {
                        signerName: 'example.com/pods',
                        keyType: 'ED25519',
                        maxExpirationSeconds: 86_400,
                        credentialBundlePath: 'bundle.pem',
                        keyPath: 'key.pem',
                        certificateChainPath: 'chain.pem',
                      },
                    },
                  ],
                },
              },
            ],
          }),
        );
        await until(() => logOf('pcert').includes('bundle=3'), 30_000, 'the credential bundle read');
        const p = pod('pcert')!;
        const first = signer.answered[0].request;
        expect(signer.answered[0].proofVerified).toBe(true);
        expect(first.metadata.generateName).toBe('req-');
        expect(first.metadata.ownerReferences).toEqual([
          { apiVersion: 'v1', kind: 'Pod', name: 'pcert', uid: p.metadata.uid },
        ]);
        expect(first.spec).toMatchObject({
          signerName: 'example.com/pods',
          podName: 'pcert',
          podUID: p.metadata.uid,
          serviceAccountName: 'default',
          serviceAccountUID: ctx().c.api.store.get('serviceaccounts', 'default', 'default')!.metadata.uid,
          nodeName: ctx().node,
          nodeUID: ctx().c.api.store.get('nodes', '', ctx().node)!.metadata.uid,
          maxExpirationSeconds: 86_400,
        });
        const volume = join(ctx().dir, 'root', 'pods', p.metadata.uid, 'volumes', 'kubernetes.io~projected', 'creds');
        const read = (file: string) => readFileSync(join(volume, file), 'utf8');
        // The first certificate was due for refresh: a second request, a new key, the bundle following it.
        await until(() => signer.answered.length >= 2, 20_000, 'the refresh request');
        await until(() => read('chain.pem').startsWith(signer.answered[1].leafPem!), 20_000, 'the refreshed chain');
        const key = read('key.pem');
        expect(key).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
        expect(read('chain.pem')).toBe(signer.answered[1].leafPem! + signer.caPem);
        expect(read('bundle.pem')).toBe(key + read('chain.pem'));
        // The key is the one the leaf certifies.
        const spki = (k: KeyObject) => k.export({ type: 'spki', format: 'der' }).toString('base64');
        expect(spki(createPublicKey(key))).toBe(spki(new X509Certificate(read('chain.pem')).publicKey));
        expect(statSync(join(volume, 'key.pem')).mode & 0o777).toBe(0o644);
        expect(signer.answered).toHaveLength(2);
        // A denied request fails the volume for good, with upstream's message and event.
        create(
          withVolumes('pcert-denied', {
            command: 'sleep 3600',
            mounts: [{ name: 'creds', mountPath: '/creds' }],
            volumes: [
              {
                name: 'creds',
                projected: {
                  sources: [
                    { podCertificate: { signerName: 'example.com/refuses', keyType: 'ECDSAP256', keyPath: 'k.pem' } },
                  ],
                },
              },
            ],
          }),
        );
        const denied = await until(
          () =>
            events('pcert-denied').find((e) => e.reason === 'FailedMount' && e.message.includes('permanently denied')),
          30_000,
          'FailedMount after the denial',
        );
        expect(denied.message).toBe(
          'MountVolume.SetUp failed for volume "creds" : PodCertificateRequest was permanently denied: reason="NotAllowed" message="not for this pod"',
        );
        // Upstream's collector: each source by signer and state.
        const metrics = (await httpGet(`http://127.0.0.1:${ctx().c.ports.ro}/metrics`)).body;
        expect(metrics).toContain('# TYPE kubelet_podcertificate_states gauge');
        expect(metrics).toContain('kubelet_podcertificate_states{signer_name="example.com/pods",state="fresh"} 1');
        expect(metrics).toContain('kubelet_podcertificate_states{signer_name="example.com/refuses",state="denied"} 1');
        expect(events('pcert-denied').find((e) => e.reason === 'Denied')?.message).toMatch(
          /^PodCertificateRequest default\/req-\w+ was denied, reason="NotAllowed", message="not for this pod"$/,
        );
      } finally {
        signer.stop();
        refuser.stop();
      }
    }, 90_000);

    it('subPath: a file of a configMap; escapes through ".." or a symlink are refused', async () => {
      create(
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: 'sub', namespace: 'default' },
          data: { 'app.conf': 'port=80' },
        },
        'configmaps',
      );
      create(
        withVolumes('sub-ok', {
          command: 'cat /etc/app.conf; echo; sleep 3600',
          mounts: [{ name: 'c', mountPath: '/etc/app.conf', subPath: 'app.conf' }],
          volumes: [{ name: 'c', configMap: { name: 'sub' } }],
        }),
      );
      create(
        withVolumes('sub-dots', {
          command: 'sleep 3600',
          mounts: [{ name: 'e', mountPath: '/x', subPath: '../../etc' }],
          volumes: [{ name: 'e', emptyDir: {} }],
        }),
      );
      create(
        bound('sub-link', {
          initContainers: [
            {
              name: 'init',
              image: 'busybox',
              command: ['sh', '-c', 'ln -s /etc /v/escape'],
              volumeMounts: [{ name: 'e', mountPath: '/v' }],
            },
          ],
          containers: [
            {
              name: 'main',
              image: 'busybox',
              command: ['sleep', '3600'],
              volumeMounts: [{ name: 'e', mountPath: '/x', subPath: 'escape' }],
            },
          ],
          volumes: [{ name: 'e', emptyDir: {} }],
        }),
      );
      await until(() => logOf('sub-ok').includes('port=80'), 20_000, 'subPath file');
      const dots = await configError('sub-dots', 'dots refused');
      expect(dots.message).toBe("unable to provision SubPath `../../etc`: must not contain '..'");
      const link = await configError('sub-link', 'symlink refused');
      expect(link.message).toBe('failed to prepare subPath for volumeMount "e" of container "main"');
    }, 40_000);

    it('a PVC bound to a hostPath PV mounts; other PV types are a clear FailedMount', async () => {
      const data = join(ctx().dir, 'pv-data');
      mkdirSync(data);
      writeFileSync(join(data, 'hello'), 'from-pv');
      const store = ctx().c.api.store;
      const claim = (name: string, volume: Obj) =>
        createBoundClaim(store, {
          volume: { apiVersion: 'v1', kind: 'PersistentVolume', ...volume },
          claim: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name, namespace: 'default' } },
        });
      claim('claim', {
        metadata: { name: 'pv1' },
        spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: data } },
      });
      claim('nfs-claim', {
        metadata: { name: 'pv-nfs' },
        spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteMany'], nfs: { server: '10.0.0.1', path: '/x' } },
      });
      create(
        withVolumes('pvc', {
          command: 'cat /data/hello; echo; sleep 3600',
          mounts: [{ name: 'd', mountPath: '/data' }],
          volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'claim' } }],
        }),
      );
      create(
        withVolumes('pvc-nfs', {
          command: 'sleep 3600',
          mounts: [{ name: 'd', mountPath: '/data' }],
          volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'nfs-claim' } }],
        }),
      );
      await until(() => logOf('pvc').includes('from-pv'), 20_000, 'PV data read');
      const ev = await until(() => events('pvc-nfs').find((e) => e.reason === 'FailedMount'), 20_000, 'FailedMount');
      expect(ev.message).toBe(
        // Named by the PersistentVolume, as upstream names a claim's volume (its spec).
        'MountVolume.SetUp failed for volume "pv-nfs" : PersistentVolume "pv-nfs" is of type nfs: tskubelet supports PersistentVolumes of type hostPath, local and csi only (no in-tree attachable volumes)',
      );
    }, 40_000);

    it("a local PV gets the pod's fsGroup, as upstream's local plugin gives it; OnRootMismatch leaves a matching root alone", async () => {
      const store = ctx().c.api.store;
      const localClaim = (name: string, path: string) =>
        createBoundClaim(store, {
          volume: {
            apiVersion: 'v1',
            kind: 'PersistentVolume',
            metadata: { name: `pv-${name}` },
            spec: { capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], local: { path } },
          },
          claim: { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name, namespace: 'default' } },
        });
      const withClaim = (name: string, claimName: string, securityContext: Obj) =>
        withVolumes(name, {
          command: 'ls /data; sleep 3600',
          mounts: [{ name: 'd', mountPath: '/data' }],
          volumes: [{ name: 'd', persistentVolumeClaim: { claimName } }],
          extra: { securityContext },
        });
      // Always (the default): every file gets the group.
      const always = join(ctx().dir, 'local-always');
      mkdirSync(always);
      writeFileSync(join(always, 'seed'), 'x');
      localClaim('local-always', always);
      create(withClaim('local-always', 'local-always', { fsGroup: 3456 }));
      await until(() => logOf('local-always').includes('seed'), 20_000, 'local PV mounted');
      expect(statSync(always).gid).toBe(3456);
      expect(statSync(always).mode & 0o2070).toBe(0o2070);
      expect(statSync(join(always, 'seed')).gid).toBe(3456);
      // OnRootMismatch: the root shows the ownership already, so a file inside keeps its group.
      const matching = join(ctx().dir, 'local-matching');
      mkdirSync(matching);
      writeFileSync(join(matching, 'own'), 'x');
      chownSync(matching, 0, 3456);
      chmodSync(matching, 0o2770);
      localClaim('local-matching', matching);
      create(withClaim('local-matching', 'local-matching', { fsGroup: 3456, fsGroupChangePolicy: 'OnRootMismatch' }));
      await until(() => logOf('local-matching').includes('own'), 20_000, 'local PV mounted');
      expect(statSync(join(matching, 'own')).gid).toBe(0);
    }, 40_000);

    it('storage_operation_duration_seconds and volume_manager_total_volumes count what the cases above did, under upstream names', async () => {
      const text = (await httpGet(`http://127.0.0.1:${ctx().c.ports.ro}/metrics`)).body;
      const value = (name: string, labels: string) =>
        Number(new RegExp(`^${name}\\{${labels.replace(/[/.]/g, '\\$&')}\\} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
      const ops = (plugin: string, status: string) =>
        value(
          'storage_operation_duration_seconds_count',
          `migrated="false",operation_name="volume_mount",status="${status}",volume_plugin="${plugin}"`,
        );
      expect(ops('kubernetes.io/configmap', 'success')).toBeGreaterThan(0);
      expect(ops('kubernetes.io/empty-dir', 'success')).toBeGreaterThan(0);
      // The NFS claim's set-up failed and keeps being retried.
      expect(ops('kubernetes.io/persistent-volume', 'fail-unknown')).toBeGreaterThan(0);
      const volumes = (plugin: string, state: string) =>
        value('volume_manager_total_volumes', `plugin_name="${plugin}",state="${state}"`);
      expect(volumes('kubernetes.io/configmap', 'actual_state_of_world')).toBeGreaterThan(0);
      // The sub-link pod's init container ran: the start counters know container types, as upstream's.
      expect(value('kubelet_started_containers_total', 'container_type="init_container"')).toBeGreaterThan(0);
      expect(
        value(
          'kubelet_started_containers_errors_total',
          'code="CreateContainerConfigError",container_type="container"',
        ),
      ).toBeGreaterThan(0);
      // A set-up claim counts under its PV's plugin, as upstream's full plugin names; the NFS claim that never set up
      // under the claim plugin.
      expect(volumes('kubernetes.io/host-path', 'actual_state_of_world')).toBeGreaterThan(0);
      expect(volumes('kubernetes.io/persistent-volume', 'desired_state_of_world')).toBeGreaterThan(0);
      expect(Number.isNaN(volumes('kubernetes.io/persistent-volume', 'actual_state_of_world'))).toBe(true);
    });

    it('deleting a pod removes everything under its pod directory (tmpfs unmounted) and nothing else', async () => {
      const uid = pod('shared')!.metadata.uid;
      const other = pod('cm')!.metadata.uid;
      const podDir = join(ctx().dir, 'root', 'pods', uid);
      expect(existsSync(join(podDir, 'volumes', 'kubernetes.io~empty-dir', 'mem'))).toBe(true);
      ctx().c.api.store.remove('pods', 'default', 'shared', {});
      await until(() => !existsSync(podDir), 30_000, 'pod dir removed');
      expect(readFileSync('/proc/self/mountinfo', 'utf8')).not.toContain(uid);
      expect(
        existsSync(join(ctx().dir, 'root', 'pods', other, 'volumes', 'kubernetes.io~configmap', 'config', 'color')),
      ).toBe(true);
      expect(existsSync(join(ctx().dir, 'host', 'file'))).toBe(true);
    }, 40_000);
  });
}
