/**
 * How often pod syncs list the runtime, seen from the kubelet's own metrics on the embedded
 * runtime: a burst of new pods is started, and shown Running, on the PLEG's lists alone (the
 * first sync of a new pod and the syncs the PLEG's events trigger take its lists, as upstream's
 * take its cache; the status after a start is read by ID). Every list a sync made on its own
 * would cost the runtime a scan of everything it has.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { PodList } from '../../src/api/types.js';
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

const dir = mkdtempSync(join(tmpdir(), 'tsk-reads-'));
const manifests = join(dir, 'manifests');
mkdirSync(manifests);
let ports: KubeletPorts;
let kubelet: Kubelet;
const N = 10;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** list_podsandbox calls and PLEG relists so far (each relist lists sandboxes once). */
async function listCounts(): Promise<{ lists: number; relists: number }> {
  const m = (await httpGet(`http://127.0.0.1:${ports.ro}/metrics`)).body;
  const num = (re: RegExp) => Number(re.exec(m)?.[1] ?? NaN);
  return {
    lists: num(/^kubelet_runtime_operations_total\{operation_type="list_podsandbox"\} (\d+)$/m),
    relists: num(/^kubelet_pleg_relist_duration_seconds_count (\d+)$/m),
  };
}

beforeAll(async () => {
  ports = await freeKubeletPorts();
  kubelet = startKubelet(
    kubeletArgs({ dir, ports, node: 'reads', manifests, extra: ['--file-check-frequency', '1s'] }),
  );
  await untilServing(ports, kubelet);
}, 30_000);

afterAll(async () => {
  await kubelet?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('runtime reads of pod syncs', () => {
  it('starts a burst of new pods with no lists beyond the PLEG relists', async () => {
    // The PLEG has listed (the first sync of a new pod takes lists begun after the kubelet started).
    await sleep(1500);
    const before = await listCounts();
    for (let i = 0; i < N; i++)
      writeFileSync(
        join(manifests, `p${i}.json`),
        JSON.stringify({
          apiVersion: 'v1',
          kind: 'Pod',
          metadata: { name: `p${i}` },
          spec: {
            terminationGracePeriodSeconds: 1,
            containers: [{ name: 'main', image: 'busybox', command: ['sleep', '600'] }],
          },
        }),
      );
    await until(
      async () =>
        (JSON.parse((await httpGet(`http://127.0.0.1:${ports.ro}/pods`)).body) as PodList).items.filter(
          (p) => p.status?.phase === 'Running',
        ).length === N,
      20_000,
      'all pods Running',
    );
    // The relists that see the containers started, and the syncs their events trigger.
    await sleep(2500);
    const after = await listCounts();
    const relists = after.relists - before.relists;
    expect(relists).toBeGreaterThanOrEqual(2);
    // At most one list in flight when a count was read (counted before its relist was).
    expect(after.lists - before.lists - relists).toBeLessThanOrEqual(1);
  }, 40_000);
});
