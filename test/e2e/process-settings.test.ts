/**
 * Settings about the kubelet process itself, on the embedded runtime: enableServer=false leaves
 * 10250 closed while the read-only and healthz ports serve (as upstream); maxOpenFiles is its
 * RLIMIT_NOFILE; oomScoreAdj is the
 * kubelet's own OOM score, and each container gets its QoS class's score instead of inheriting it.
 * Scores above the kubelet's are used here: lowering one needs CAP_SYS_RESOURCE, which the test
 * machines' root does not have (the kubelet then logs the failure and goes on, as upstream's).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import {
  freeKubeletPorts,
  httpGet,
  kubeletArgs,
  startKubelet,
  until,
  type Kubelet,
  type KubeletPorts,
} from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-procset-'));
const manifests = join(dir, 'manifests');
const out = join(dir, 'out');
let k: Kubelet;
let ports: KubeletPorts;
const refused = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => {
      s.destroy();
      resolve(false);
    });
    s.once('error', () => resolve(true));
  });
const pod = (name: string, resources: Record<string, unknown>) =>
  JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name },
    spec: {
      terminationGracePeriodSeconds: 1,
      containers: [
        {
          name: 'c',
          image: 'busybox',
          resources,
          command: ['sh', '-c', `cat /proc/self/oom_score_adj > ${out}/${name}; exec sleep 3600`],
        },
      ],
    },
  });

beforeAll(async () => {
  mkdirSync(manifests);
  mkdirSync(out);
  writeFileSync(join(manifests, 'besteffort.json'), pod('besteffort', {}));
  writeFileSync(join(manifests, 'burstable.json'), pod('burstable', { requests: { memory: '2Gi' } }));
  ports = await freeKubeletPorts();
  k = startKubelet(
    kubeletArgs({
      dir,
      ports,
      node: 'procset',
      manifests,
      extra: ['--enable-server=false', '--oom-score-adj=500', '--max-open-files=4096'],
    }),
  );
  await until(async () => (await httpGet(`http://127.0.0.1:${ports.hz}/healthz`)).status === 200, 20_000, 'healthz');
}, 30_000);
afterAll(async () => {
  await k?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('process settings', () => {
  it('enableServer=false: no secure port; the read-only port serves the pods', async () => {
    await until(
      async () => (await httpGet(`http://127.0.0.1:${ports.ro}/pods`)).status === 200,
      10_000,
      'read-only port',
    );
    expect(await refused(ports.port)).toBe(true);
  });
  it("maxOpenFiles: the kubelet's own open-files limits, both of them (upstream rlimit.SetNumFiles)", () => {
    expect(
      /^Max open files\s+(\S+)\s+(\S+)/m.exec(readFileSync(`/proc/${k.proc.pid}/limits`, 'utf8'))?.slice(1),
    ).toEqual(['4096', '4096']);
  });
  it("oomScoreAdj: the kubelet's own score; containers get their QoS class's", async () => {
    expect(readFileSync(`/proc/${k.proc.pid}/oom_score_adj`, 'utf8').trim()).toBe('500');
    // Written by the containers' shells: the file exists a moment before its line is in it.
    const written = (name: string) =>
      existsSync(join(out, name)) && readFileSync(join(out, name), 'utf8').endsWith('\n');
    await until(() => written('besteffort') && written('burstable'), 20_000, 'scores written');
    expect(readFileSync(join(out, 'besteffort'), 'utf8').trim()).toBe('1000');
    // Upstream's Burstable score: 1000 − 1000 × request / memory capacity.
    expect(readFileSync(join(out, 'burstable'), 'utf8').trim()).toBe(
      String(1000 - Math.floor((1000 * 2 * 2 ** 30) / totalmem())),
    );
  });
});
