/**
 * Image pull records (KubeletEnsureSecretPulledImages): who may use an image already on the node,
 * the records in upstream's files (a Go kubelet v1.36's record is read as it is), and the image
 * manager refusing a present image to a pod that cannot show the credentials it was pulled with.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod } from '../../../src/api/types.js';
import type { ImageService } from '../../../src/cri/services.js';
import {
  PullRecords,
  allowlisted,
  mergeCredentials,
  mustAttemptImagePull,
  recordFileName,
  trimImageTagDigest,
  type ImagePulledRecord,
  type PullDecisionInput,
} from '../../../src/agent/images/pull-records.js';
import { ImageManager } from '../../../src/agent/images/image-manager.js';
import { credentialsFor, fromServiceAccount, type PullSecret } from '../../../src/agent/images/keyring.js';
import { FakeClock } from '../../../src/lib/clock.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-pullrec-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const fixture = join(import.meta.dirname, '..', '..', 'fixtures', 'go-kubelet-1.36', 'checkpoints');

const secret = { uid: 'u-1', namespace: 'team', name: 'reg', credentialHash: 'h1' };
const record = (mapping: ImagePulledRecord['credentialMapping']): ImagePulledRecord => ({
  kind: 'ImagePulledRecord',
  apiVersion: 'kubelet.config.k8s.io/v1beta1',
  lastUpdatedTime: '2026-11-28T00:00:00Z',
  imageRef: 'sha256:abc',
  credentialMapping: mapping,
});
const decide = (o: Partial<PullDecisionInput>) =>
  mustAttemptImagePull({
    policy: 'NeverVerifyPreloadedImages',
    allowlist: [],
    image: 'reg.example:5000/app:1',
    record: undefined,
    intentExists: false,
    podSecrets: [],
    ...o,
  });

describe('MustAttemptImagePull', () => {
  it('image names lose their tag and digest, not their registry port', () => {
    expect(trimImageTagDigest('reg.example:5000/app:1@sha256:abcd')).toBe('reg.example:5000/app');
    expect(trimImageTagDigest('busybox')).toBe('busybox');
    expect(allowlisted('reg.example/team/app:1', ['reg.example/team/*'])).toBe(true);
    expect(allowlisted('reg.example/other:1', ['reg.example/team/*', 'reg.example/app'])).toBe(false);
    // Familiar names are the registry's full names (kubernetes/kubernetes#137629).
    expect(allowlisted('alpine:3.20', ['docker.io/library/alpine'])).toBe(true);
    expect(allowlisted('docker.io/library/alpine@sha256:abcd', ['alpine'])).toBe(true);
    expect(allowlisted('team/app', ['docker.io/team/*'])).toBe(true);
    expect(allowlisted('alpine', ['docker.io/team/*', 'docker.io/library/alpine2'])).toBe(false);
    expect(allowlisted('reg.example/teamwork/app', ['reg.example/team/*'])).toBe(false);
    expect(allowlisted('reg.example/teamwork/app', ['reg.example/*'])).toBe(true);
    expect(allowlisted('index.docker.io/team/app:1', ['docker.io/team/*'])).toBe(true);
  });

  const withSecret = record({ 'reg.example:5000/app': { kubernetesSecrets: [secret] } });
  const cases: [string, Partial<PullDecisionInput>, boolean][] = [
    ['a preloaded image (no record) under NeverVerifyPreloadedImages', {}, false],
    ['a preloaded image under AlwaysVerify', { policy: 'AlwaysVerify' }, true],
    [
      'an allowlisted preloaded image',
      { policy: 'NeverVerifyAllowlistedImages', allowlist: ['reg.example:5000/app'] },
      false,
    ],
    ['a preloaded image not on the allowlist', { policy: 'NeverVerifyAllowlistedImages' }, true],
    ['an image whose pull was interrupted (an intent, no record)', { intentExists: true }, true],
    ['anything under NeverVerify', { policy: 'NeverVerify', record: withSecret }, false],
    ['a pod without the secret the image was pulled with', { record: withSecret }, true],
    ['a pod with that secret', { record: withSecret, podSecrets: [secret] }, false],
    [
      'a pod with another secret holding the same credentials',
      { record: withSecret, podSecrets: [{ ...secret, uid: 'u-2', name: 'copy' }] },
      false,
    ],
    [
      'a pod with another secret and other credentials',
      { record: withSecret, podSecrets: [{ ...secret, uid: 'u-2', name: 'x', credentialHash: 'h2' }] },
      true,
    ],
    [
      'an image pulled without pod credentials',
      { record: record({ 'reg.example:5000/app': { nodePodsAccessible: true } }) },
      false,
    ],
    [
      'a record of the ref for another image name',
      { record: record({ 'other/app': { nodePodsAccessible: true } }) },
      true,
    ],
  ];
  for (const [name, input, pull] of cases) it(name, () => expect(decide(input).pull).toBe(pull));

  it('lets a pod of the service account an image was pulled for use it, not another (a recreated one is another)', () => {
    const account = { uid: 'sa-1', namespace: 'team', name: 'puller' };
    const pulledForAccount = record({ 'reg.example:5000/app': { kubernetesServiceAccounts: [account] } });
    expect(decide({ record: pulledForAccount, podServiceAccounts: [account] }).pull).toBe(false);
    expect(decide({ record: pulledForAccount, podServiceAccounts: [{ ...account, uid: 'sa-2' }] }).pull).toBe(true);
    expect(decide({ record: pulledForAccount, podSecrets: [secret] }).pull).toBe(true);
    // A second service account is added to the record once.
    const other = { uid: 'sa-3', namespace: 'team', name: 'builder' };
    const merged = mergeCredentials(
      pulledForAccount,
      'sha256:abc',
      'reg.example:5000/app:2',
      { kubernetesServiceAccounts: [other] },
      'now',
    );
    expect(merged.record.credentialMapping!['reg.example:5000/app']).toEqual({
      kubernetesServiceAccounts: [account, other],
    });
    const again = mergeCredentials(
      merged.record,
      'sha256:abc',
      'reg.example:5000/app',
      {
        kubernetesServiceAccounts: [other],
      },
      'later',
    );
    expect(again.changed).toBe(false);
  });

  it('remembers a secret that matched by its credentials only, or by its identity with new credentials', () => {
    const copy = { ...secret, uid: 'u-2', name: 'copy' };
    expect(decide({ record: withSecret, podSecrets: [copy] }).remember).toEqual(copy);
    const rotated = { ...secret, credentialHash: 'h9' };
    expect(decide({ record: withSecret, podSecrets: [rotated] }).remember).toEqual(rotated);
    expect(decide({ record: withSecret, podSecrets: [secret] }).remember).toBeUndefined();
    const merged = mergeCredentials(
      withSecret,
      'sha256:abc',
      'reg.example:5000/app:2',
      { kubernetesSecrets: [rotated] },
      'now',
    );
    expect(merged.record.credentialMapping!['reg.example:5000/app'].kubernetesSecrets).toEqual([rotated]);
    expect(
      mergeCredentials(merged.record, 'sha256:abc', 'reg.example:5000/app', { kubernetesSecrets: [rotated] }, 'later')
        .changed,
    ).toBe(false);
  });
});

describe('the records on disk', () => {
  it("reads a Go kubelet v1.36's record as it is", async () => {
    const root = join(dir, 'go-root');
    cpSync(join(fixture, 'image_manager'), join(root, 'image_manager'), { recursive: true });
    const imageRef = 'sha256:3f7f71e4daec103ff9b9b3e8658a9ba76e32f8f34a41bb81d43358086f590359';
    expect(readdirSync(join(root, 'image_manager', 'pulled'))).toEqual([recordFileName(imageRef)]);
    const found = await new PullRecords(root).record(imageRef);
    expect(found?.credentialMapping?.['localhost:5000/pause']?.kubernetesSecrets?.[0]).toMatchObject({
      namespace: 'container-runtime-2545',
    });
    // That image is refused to a pod without the secret, and given to one with it.
    expect(decide({ image: 'localhost:5000/pause:3.10', record: found }).pull).toBe(true);
    const theirs = found!.credentialMapping!['localhost:5000/pause'].kubernetesSecrets![0];
    expect(decide({ image: 'localhost:5000/pause:3.10', record: found, podSecrets: [theirs] }).pull).toBe(false);
  });

  it('writes the intent during a pull and the record after it, in upstream files and modes', async () => {
    const root = join(dir, 'ours');
    const records = new PullRecords(root);
    await records.beginPull('reg.example/app:1');
    const intent = join(root, 'image_manager', 'pulling', recordFileName('reg.example/app:1'));
    expect(JSON.parse(readFileSync(intent, 'utf8'))).toEqual({
      kind: 'ImagePullIntent',
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      image: 'reg.example/app:1',
    });
    expect(await records.intentExists('reg.example/app:1')).toBe(true);
    await records.endPull('reg.example/app:1', {
      imageRef: 'sha256:feed',
      credentials: { kubernetesSecrets: [secret] },
    });
    expect(await records.intentExists('reg.example/app:1')).toBe(false);
    const file = join(root, 'image_manager', 'pulled', recordFileName('sha256:feed'));
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(root, 'image_manager', 'pulled')).mode & 0o777).toBe(0o700);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toMatchObject({
      kind: 'ImagePulledRecord',
      imageRef: 'sha256:feed',
      credentialMapping: { 'reg.example/app': { kubernetesSecrets: [secret] } },
    });
  });
});

describe('pruning the records of images gone', () => {
  it("removes a record, the Go kubelet's too, once its image is gone and it is older than the listing; keeps the rest", async () => {
    const root = join(dir, 'prune');
    cpSync(join(fixture, 'image_manager'), join(root, 'image_manager'), { recursive: true });
    const goRef = 'sha256:3f7f71e4daec103ff9b9b3e8658a9ba76e32f8f34a41bb81d43358086f590359';
    const records = new PullRecords(root);
    const credentials = { nodePodsAccessible: true };
    await records.remember('reg.example/kept:1', 'sha256:kept', credentials);
    await records.remember('reg.example/gone:1', 'sha256:gone', credentials);
    const pulled = join(root, 'image_manager', 'pulled');
    writeFileSync(join(pulled, 'not-a-record'), 'hello');
    // Listed after the records above were written (record times are whole seconds).
    const listedAtMs = Date.now() + 1000;
    // A pull that ends after the listing: its image may be missing from the list, its record stays.
    const late = { kind: 'ImagePulledRecord', imageRef: 'sha256:late', lastUpdatedTime: '2999-01-01T00:00:00Z' };
    writeFileSync(join(pulled, recordFileName('sha256:late')), JSON.stringify(late));

    const pruned = await records.pruneUnknown(new Set(['sha256:kept']), listedAtMs);
    expect(pruned.sort()).toEqual([goRef, 'sha256:gone'].sort());
    expect(readdirSync(pulled).sort()).toEqual(
      [recordFileName('sha256:kept'), recordFileName('sha256:late'), 'not-a-record'].sort(),
    );
    expect(await records.record('sha256:gone')).toBeUndefined();
    expect(await records.record('sha256:kept')).toBeDefined();
    // Nothing recorded yet: nothing to prune, no error.
    expect(await new PullRecords(join(dir, 'empty')).pruneUnknown(new Set(), Date.now())).toEqual([]);
  });
});

describe('the image manager with pull records', () => {
  const image = 'reg.example/private:1';
  const dockerconfig = (user: string) =>
    Buffer.from(JSON.stringify({ auths: { 'reg.example': { username: user, password: 'pw' } } })).toString('base64');
  const pullSecret: PullSecret = {
    metadata: { uid: 'sec-1', namespace: 'team', name: 'regcred' },
    type: 'kubernetes.io/dockerconfigjson',
    data: { '.dockerconfigjson': dockerconfig('alice') },
  };
  /** A registry that serves the image only to alice; the image stays on the node once pulled. */
  const registry = () => {
    let present = false;
    const pulls: (string | undefined)[] = [];
    const images = {
      imageStatus: async () => (present ? { id: 'sha256:private', size: 10 } : null),
      pullImage: async (_spec: unknown, auth?: { username?: string }) => {
        pulls.push(auth?.username);
        if (auth?.username !== 'alice') throw new Error('pull access denied');
        present = true;
        return 'sha256:private';
      },
    } as unknown as ImageService;
    return { images, pulls };
  };
  const pod = (uid: string): Pod => ({
    metadata: { name: uid, namespace: 'team', uid },
    spec: { containers: [{ name: 'main', image, imagePullPolicy: 'IfNotPresent' }] },
  });

  it('a pod without credentials is refused an image another pod pulled with a secret; a pod with the secret gets it without a pull', async () => {
    const { images, pulls } = registry();
    const manager = new ImageManager({
      images,
      clock: new FakeClock(1000),
      serializeImagePulls: true,
      pullRecords: {
        records: new PullRecords(join(dir, 'manager')),
        policy: 'NeverVerifyPreloadedImages',
        allowlist: [],
      },
    });
    const first = await manager.ensureImageExists(pod('a'), pod('a').spec.containers[0], {
      auth: credentialsFor(image, [pullSecret]),
    });
    expect(first).toMatchObject({ ok: true, pulled: true });
    const stranger = await manager.ensureImageExists(pod('b'), pod('b').spec.containers[0], { auth: [] });
    expect(stranger).toMatchObject({ ok: false, reason: 'ErrImagePull' });
    const friend = await manager.ensureImageExists(pod('c'), pod('c').spec.containers[0], {
      auth: credentialsFor(image, [pullSecret]),
    });
    expect(friend).toMatchObject({ ok: true, pulled: false });
    expect(pulls).toEqual(['alice', undefined]);
    const never = { ...pod('d').spec.containers[0], imagePullPolicy: 'Never' as const };
    expect(await manager.ensureImageExists(pod('d'), never, { auth: [] })).toMatchObject({
      ok: false,
      reason: 'ErrImageNeverPull',
    });
  });

  it("an image pulled with a credential provider's answer to a service account's token: that account's pods only", async () => {
    const { images, pulls } = registry();
    const recordsDir = join(dir, 'manager-sa');
    const manager = new ImageManager({
      images,
      clock: new FakeClock(1000),
      serializeImagePulls: true,
      pullRecords: { records: new PullRecords(recordsDir), policy: 'NeverVerifyPreloadedImages', allowlist: [] },
    });
    // What a provider with tokenAttributes answers for a pod of each service account.
    const answerFor = (account: { uid: string; namespace: string; name: string }) => {
      const auths = [{ username: 'alice', password: 'pw' }];
      fromServiceAccount(auths, account);
      return auths;
    };
    const puller = { uid: 'sa-1', namespace: 'team', name: 'puller' };
    const builder = { uid: 'sa-2', namespace: 'team', name: 'builder' };
    expect(
      await manager.ensureImageExists(pod('a'), pod('a').spec.containers[0], { auth: answerFor(puller) }),
    ).toMatchObject({ ok: true, pulled: true });
    const written = JSON.parse(
      readFileSync(join(recordsDir, 'image_manager', 'pulled', recordFileName('sha256:private')), 'utf8'),
    );
    expect(written.credentialMapping['reg.example/private']).toEqual({ kubernetesServiceAccounts: [puller] });
    // Another pod of the same account uses it as it is; a pod of another account pulls it with its own answer.
    expect(
      await manager.ensureImageExists(pod('b'), pod('b').spec.containers[0], { auth: answerFor(puller) }),
    ).toMatchObject({ ok: true, pulled: false });
    expect(
      await manager.ensureImageExists(pod('c'), pod('c').spec.containers[0], { auth: answerFor(builder) }),
    ).toMatchObject({ ok: true, pulled: true });
    expect(pulls).toEqual(['alice', 'alice']);
  });
});
