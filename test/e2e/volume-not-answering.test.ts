/**
 * End to end: a volume that stops answering (a FUSE filesystem whose calls block, as an NFS mount's do when its server
 * is gone) does not hold the kubelet. Containers whose subPath lies on it fail to start with why, after a deadline, and
 * a hostPath volume whose type is checked there fails to set up; the kubelet meanwhile reads new manifests and runs
 * their pods. Regression: each of those containers' subPath lookup
 * held one of libuv's four threadpool threads, so after four the kubelet could read no file at all.
 * Root and Debian's python3-fusepy (CI installs it).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod, PodList } from '../../src/api/types.js';
import {
  freeKubeletPorts,
  httpGet,
  kubeletArgs,
  startKubelet,
  until,
  untilServing,
  type Kubelet,
  type KubeletPorts,
} from './helpers.js';
import { hangFsAvailable, startHangFs, type HangFs } from '../fixtures/hang-fs.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-hangfs-'));
let hangFs: HangFs | undefined;
let mountpoint = '';
const manifests = join(dir, 'manifests');
const node = 'hangfs';
let kubelet: Kubelet;
let ports: KubeletPorts;

/**
 * A static pod whose container mounts the hostPath `path` at /data (with `o.subPath`; `o.type` its hostPath type),
 * running `o.command` (sleep) in `o.workingDir`.
 */
function writeHostPathPod(
  name: string,
  path: string,
  o: { subPath?: string; type?: string; command?: string; workingDir?: string } = {},
): void {
  const mount = `{name: data, mountPath: /data${o.subPath ? `, subPath: ${o.subPath}` : ''}}`;
  const command = `[${o.command ?? 'sleep'}, "3600"]${o.workingDir ? `, workingDir: ${o.workingDir}` : ''}`;
  writeFileSync(
    join(manifests, `${name}.yaml`),
    `apiVersion: v1
kind: Pod
metadata: {name: ${name}}
spec:
  containers:
  - {name: main, image: busybox, command: ${command}, volumeMounts: [${mount}]}
  volumes: [{name: data, hostPath: {path: ${path}${o.type ? `, type: ${o.type}` : ''}}}]
`,
  );
}

/** The message of the last failure of pod `name`'s container once it contains `text`. */
async function failureOf(name: string, text: string): Promise<string> {
  return until(
    async () => {
      const status = (await podNamed(name))?.status?.containerStatuses?.[0];
      const messages = [
        status?.state?.waiting?.message,
        status?.state?.terminated?.message,
        status?.lastState?.terminated?.message,
      ];
      return messages.find((m) => m?.includes(text));
    },
    30_000,
    `pod ${name} failed with ${text}`,
  );
}

const podNamed = async (name: string): Promise<Pod | undefined> =>
  ((JSON.parse((await httpGet(`http://127.0.0.1:${ports.ro}/pods`)).body) as PodList).items as Pod[]).find(
    (p) => p.metadata.name === `${name}-${node}`,
  );

beforeAll(async () => {
  if (!hangFsAvailable) return;
  hangFs = await startHangFs(dir);
  mountpoint = hangFs.mountpoint;
  mkdirSync(manifests);
  ports = await freeKubeletPorts();
  kubelet = startKubelet(kubeletArgs({ dir, ports, node, manifests, extra: ['--file-check-frequency', '1s'] }));
  await untilServing(ports, kubelet);
}, 30_000);

afterAll(async () => {
  // The server is back: the blocked calls fail, and everything can stop.
  hangFs?.release();
  await kubelet?.stop();
  hangFs?.stop();
  rmSync(dir, { recursive: true, force: true });
});

// A kernel without FUSE cannot host the test's filesystem (these machines have it).
describe.runIf(hangFsAvailable)('a volume that does not answer', () => {
  it('fails the starts that need it, after a deadline, and holds nothing else of the kubelet', async () => {
    // More containers than libuv has threadpool threads, each with a subPath on the hung filesystem.
    for (let i = 0; i < 6; i++) writeHostPathPod(`stuck${i}`, join(mountpoint, 'hang', `v${i}`), { subPath: 'sub' });
    // And pods whose hostPath has a type, which is checked on the node's path.
    for (let i = 0; i < 2; i++) writeHostPathPod(`typed${i}`, join(mountpoint, 'hang', `t${i}`), { type: 'Directory' });
    // And pods that mount a hostPath there as it is: the embedded runtime looks at the mount's source.
    for (let i = 0; i < 4; i++) writeHostPathPod(`plain${i}`, join(mountpoint, 'hang', `p${i}`));
    // And containers whose command or working dir is there, in a volume (through a link from a directory that answers:
    // the filesystem's daemon, all of whose threads are blocked by now, answers nothing) or on the host: the embedded
    // runtime looks for them before it starts the container.
    mkdirSync(join(dir, 'local'));
    symlinkSync(join(mountpoint, 'hang'), join(dir, 'local', 'link'));
    writeHostPathPod('command', join(dir, 'local'), { command: '/data/link/tool' });
    writeHostPathPod('workdir', join(dir, 'local'), { workingDir: '/data/link' });
    writeFileSync(
      join(manifests, 'host-command.yaml'),
      `apiVersion: v1\nkind: Pod\nmetadata: {name: host-command}\nspec:\n  containers:\n  - {name: main, image: busybox, command: [${join(mountpoint, 'hang', 'tool')}]}\n`,
    );
    await until(
      async () => (await Promise.all([0, 1, 2, 3, 4, 5].map((i) => podNamed(`stuck${i}`)))).every(Boolean),
      20_000,
      'the stuck pods admitted',
    );
    // A pod written after them: its manifest is read and it runs.
    writeFileSync(
      join(manifests, 'alive.yaml'),
      'apiVersion: v1\nkind: Pod\nmetadata: {name: alive}\nspec:\n  containers:\n  - {name: main, image: busybox, command: [sleep, "3600"]}\n',
    );
    await until(async () => (await podNamed('alive'))?.status?.phase === 'Running', 30_000, 'the new pod Running');
    // The stuck containers fail with why once the volume has not answered in time.
    const waiting = await until(
      async () => {
        const w = (await podNamed('stuck0'))?.status?.containerStatuses?.[0]?.state?.waiting;
        return w?.reason === 'CreateContainerConfigError' ? w : undefined;
      },
      30_000,
      'the stuck container failed',
    );
    expect(waiting.message).toBe(
      'failed to prepare subPath for volumeMount "data" of container "main": volume no answer within 10s',
    );
    // The typed hostPath volumes fail to set up, saying why, and are tried again.
    await until(
      () =>
        kubelet
          .output()
          .includes(`hostPath type check failed: ${join(mountpoint, 'hang', 't0')}: no answer within 10s`),
      30_000,
      'the hostPath type check failed',
    );
    expect((await podNamed('typed0'))?.status?.containerStatuses?.[0]?.state?.waiting?.reason).toBe(
      'ContainerCreating',
    );
    // The plain hostPath mounts fail to start, the runtime saying why.
    const plain = await failureOf('plain0', 'no answer within 10s');
    expect(plain).toContain(
      `error mounting "${join(mountpoint, 'hang', 'p0')}" to "/data": source: no answer within 10s`,
    );
    // So do those whose command or working dir is there.
    expect(await failureOf('command', 'no answer')).toBe('exec: "/data/link/tool": no answer within 10s');
    expect(await failureOf('workdir', 'no answer')).toBe(
      'chdir to cwd ("/data/link") set in config failed: no answer within 10s',
    );
    expect(await failureOf('host-command', 'no answer')).toBe(
      `exec: "${join(mountpoint, 'hang', 'tool')}": no answer within 10s`,
    );
    expect(kubelet.proc.exitCode).toBeNull();
  }, 90_000);
});
