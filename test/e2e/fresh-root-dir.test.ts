/**
 * Regression (reliability issue, defect 3): a node whose `--root-dir` does not exist yet. The
 * kubelet creates it with upstream's layout and modes (those a Go kubelet v1.36 left, in
 * ../shared/fixtures) and runs, instead of exiting when its first manager writes there. The
 * serving certificate is given, so nothing else (the local PKI) makes the directory first.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Pod, PodList } from '../../src/api/types.js';
import {
  freeKubeletPorts,
  givenServingCertFlags,
  httpGet,
  kubeletArgs,
  startKubelet,
  until,
  type Kubelet,
} from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-fresh-'));
const manifests = join(dir, 'manifests');
mkdirSync(manifests);
const node = 'fresh-node';
let kubelet: Kubelet | undefined;

afterAll(async () => {
  await kubelet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

/**
 * The modes of the top-level directories a Go kubelet v1.36.2 left (test/fixtures/go-kubelet-1.36/root-dir-layout.txt).
 */
const layoutText = readFileSync(
  join(import.meta.dirname, '..', 'fixtures', 'go-kubelet-1.36', 'root-dir-layout.txt'),
  'utf8',
);
const upstreamModes = new Map(
  [...layoutText.matchAll(/^d (\d+) \.\/?([^/\n]*)$/gm)].map(
    ([, mode, path]) => [path === '' ? '.' : path, parseInt(mode, 8)] as const,
  ),
);
/** Those that exist before any pod or image (image_manager/ is the image pull records'). */
const upstreamLayout = Object.fromEntries(
  ['.', 'pods', 'plugins', 'plugins_registry', 'pod-resources', 'checkpoints'].map((p) => [p, upstreamModes.get(p)]),
);

describe('a root dir that does not exist yet', () => {
  it('is created with upstream layout and modes, and the kubelet serves and runs a static pod', async () => {
    const certFlags = await givenServingCertFlags(dir, node);
    writeFileSync(
      join(manifests, 'web.yaml'),
      'apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers:\n  - {name: main, image: busybox, command: [sleep, "3600"]}\n',
    );
    const root = join(dir, 'var', 'lib', 'kubelet');
    const ports = await freeKubeletPorts();
    const args = kubeletArgs({ dir, ports, node, manifests }).map((a) => (a === join(dir, 'root') ? root : a));
    kubelet = startKubelet([...args, ...certFlags, '--cpu-manager-policy', 'none']);
    await until(
      async () => (await httpGet(`http://127.0.0.1:${ports.hz}/healthz`)).status === 200,
      20_000,
      `healthz\n${kubelet.output()}`,
    );
    await until(
      async () => {
        const items = (JSON.parse((await httpGet(`http://127.0.0.1:${ports.ro}/pods`)).body) as PodList).items as Pod[];
        return items.length === 1 && items[0].status?.phase === 'Running';
      },
      20_000,
      'the static pod Running',
    );
    const modes = Object.fromEntries(
      Object.keys(upstreamLayout).map((p) => [p, statSync(join(root, p)).mode & 0o7777]),
    );
    expect(Object.values(upstreamLayout).every((m) => m !== undefined)).toBe(true);
    expect(modes).toEqual(upstreamLayout);
    // The pod's own directories and files, as the Go kubelet's pod with a container "main" has them.
    const [uid] = readdirSync(join(root, 'pods'));
    const podEntries = (text: string, pod: string) =>
      [
        ...text.matchAll(
          new RegExp(
            `^([df]) (\\d+) \\./pods/${pod}(/(?:containers(?:/main(?:/[0-9a-f]{8})?)?|etc-hosts|volumes|plugins))?$`,
            'gm',
          ),
        ),
      ]
        .map(([, type, mode, path]) => `${type} ${mode} ${(path ?? '').replace(/[0-9a-f]{8}$/, '<id>')}`)
        .sort();
    const ours = (path: string) => {
      const s = statSync(join(root, 'pods', uid, path));
      return `${s.isDirectory() ? 'd' : 'f'} ${(s.mode & 0o7777).toString(8)} ${path ? `/${path}` : ''}`;
    };
    const [termination] = readdirSync(join(root, 'pods', uid, 'containers', 'main'));
    expect(
      ['', 'containers', 'containers/main', `containers/main/${termination}`, 'etc-hosts', 'volumes', 'plugins']
        .map(ours)
        .map((line) => line.replace(/[0-9a-f]{8}$/, '<id>'))
        .sort(),
    ).toEqual(podEntries(layoutText, '65762a56-103b-4b67-bec7-83643c44f28a'));
    // The memory manager's state, byte for byte and mode as a Go kubelet v1.36.2 left it.
    const memoryState = join(root, 'memory_manager_state');
    expect(readFileSync(memoryState, 'utf8')).toBe(
      readFileSync(
        join(import.meta.dirname, '..', 'fixtures', 'go-kubelet-1.36', 'checkpoints', 'memory_manager_state'),
        'utf8',
      ),
    );
    expect((statSync(memoryState).mode & 0o777).toString(8)).toBe(
      /^f (\d+) \.\/memory_manager_state$/m.exec(layoutText)![1],
    );
    expect(kubelet.proc.exitCode).toBeNull();
  }, 40_000);
});
