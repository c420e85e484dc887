/**
 * Pull credentials reach the CRI PullImage call. No registry is reachable on these machines, so
 * the ImageService here is a small in-memory registry at the CRI seam that demands credentials:
 * the image manager must try the pod's imagePullSecrets (most specific first) and record the
 * upstream events.
 */
import { describe, expect, it } from 'vitest';
import type { Pod } from '../../../src/api/types.js';
import type { ImageService } from '../../../src/cri/services.js';
import type * as cri from '../../../src/cri/types.js';
import { ImageManager } from '../../../src/agent/images/image-manager.js';
import { credentialsFor } from '../../../src/agent/images/keyring.js';
import { FakeClock } from '../../../src/lib/clock.js';
import type { EventSink } from '../../../src/agent/events/recorder.js';

function registry(users: Record<string, string>) {
  const present = new Map<string, cri.Image>();
  const tried: (cri.AuthConfig | undefined)[] = [];
  const svc = {
    async listImages() {
      return [...present.values()];
    },
    async imageStatus(spec: cri.ImageSpec) {
      return present.get(spec.image) ?? [...present.values()].find((i) => i.id === spec.image) ?? null;
    },
    async pullImage(spec: cri.ImageSpec, auth?: cri.AuthConfig) {
      tried.push(auth);
      if (!auth?.username || users[auth.username] !== auth.password)
        throw new Error('failed to resolve reference: pull access denied, 401 Unauthorized');
      present.set(spec.image, {
        id: `sha256:${spec.image.length}`,
        repo_tags: [spec.image],
        repo_digests: [],
        size: 1234,
        uid: null,
        username: '',
        spec: null,
        pinned: false,
      } as unknown as cri.Image);
      return `sha256:${spec.image.length}`;
    },
    async removeImage() {},
    async imageFsInfo() {
      return { image_filesystems: [] };
    },
  } satisfies ImageService;
  return { svc, tried };
}

const b64 = (s: string) => Buffer.from(s).toString('base64');
const secret = (auths: Record<string, unknown>) => ({ data: { '.dockerconfigjson': b64(JSON.stringify({ auths })) } });
const pod: Pod = {
  metadata: { name: 'p', namespace: 'ns', uid: 'u1' },
  spec: { containers: [{ name: 'app', image: 'registry.example.com/team/app:1', imagePullPolicy: 'IfNotPresent' }] },
};

describe('image pulls with imagePullSecrets', () => {
  it('tries the matching credentials in order and records Pulling/Pulled', async () => {
    const { svc, tried } = registry({ alice: 'right' });
    const events: string[] = [];
    const sink: EventSink = { record: (_ref, type, reason, message) => events.push(`${type} ${reason} ${message}`) };
    const m = new ImageManager({ images: svc, clock: new FakeClock(0), serializeImagePulls: true, events: sink });
    const auth = credentialsFor(pod.spec.containers[0].image!, [
      secret({ 'registry.example.com': { username: 'alice', password: 'right' } }),
      secret({ 'registry.example.com/team': { username: 'alice', password: 'stale' } }),
    ]);
    const r = await m.ensureImageExists(pod, pod.spec.containers[0], { auth });
    expect(r).toMatchObject({ ok: true, pulled: true });
    expect(tried.map((a) => a?.password)).toEqual(['stale', 'right']);
    expect(events[0]).toBe('Normal Pulling Pulling image "registry.example.com/team/app:1"');
    expect(events[1]).toMatch(
      /^Normal Pulled Successfully pulled image "registry.example.com\/team\/app:1" in [\d.]+s \([\d.]+s including waiting\)\. Image size: 1234 bytes\.$/,
    );
    const again = await m.ensureImageExists(pod, pod.spec.containers[0], { auth });
    expect(again).toMatchObject({ ok: true, pulled: false });
    expect(events.at(-1)).toBe(
      'Normal Pulled Container image "registry.example.com/team/app:1" already present on machine',
    );
  });
  it("every credential refused: the status is upstream's aggregate of the pulls' errors, each message once", async () => {
    const { svc, tried } = registry({ alice: 'right' });
    const m = new ImageManager({ images: svc, clock: new FakeClock(0), serializeImagePulls: true });
    const auth = credentialsFor(pod.spec.containers[0].image!, [
      secret({ 'registry.example.com': { username: 'alice', password: 'old' } }),
      secret({ 'registry.example.com/team': { username: 'alice', password: 'stale' } }),
    ]);
    const denied = 'failed to resolve reference: pull access denied, 401 Unauthorized';
    expect(await m.ensureImageExists(pod, pod.spec.containers[0], { auth })).toMatchObject({
      ok: false,
      reason: 'ErrImagePull',
      // Both refusals say the same: Go's Aggregate prints a repeated message once (and then without brackets).
      message: denied,
      eventMessage: `Failed to pull image "registry.example.com/team/app:1": ${denied}`,
    });
    expect(tried.map((a) => a?.password)).toEqual(['stale', 'old']);
  });
  it('without working credentials: ErrImagePull, then ImagePullBackOff, with Failed/BackOff events', async () => {
    const { svc, tried } = registry({ alice: 'right' });
    const events: string[] = [];
    const m = new ImageManager({
      images: svc,
      clock: new FakeClock(0),
      serializeImagePulls: false,
      events: { record: (_r, type, reason, message) => events.push(`${type} ${reason} ${message}`) },
    });
    const r = await m.ensureImageExists(pod, pod.spec.containers[0], { auth: [] });
    const denied = 'failed to resolve reference: pull access denied, 401 Unauthorized';
    // Upstream: the status carries the runtime's error, the event says which image.
    expect(r).toMatchObject({ ok: false, reason: 'ErrImagePull', message: denied });
    expect(tried).toEqual([undefined]);
    const b = await m.ensureImageExists(pod, pod.spec.containers[0], { auth: [] });
    // During the back-off the status still tells why (upstream's prevPullErrMsg), the event does not.
    expect(b).toMatchObject({
      ok: false,
      reason: 'ImagePullBackOff',
      message: `Back-off pulling image "registry.example.com/team/app:1": ErrImagePull: ${denied}`,
    });
    expect(events).toEqual([
      'Normal Pulling Pulling image "registry.example.com/team/app:1"',
      `Warning Failed Failed to pull image "registry.example.com/team/app:1": ${denied}`,
      'Warning Failed Error: ErrImagePull',
      'Normal BackOff Back-off pulling image "registry.example.com/team/app:1"',
      'Warning Failed Error: ImagePullBackOff',
    ]);
  });
});
