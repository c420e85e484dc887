/**
 * The kubelet-managed /etc/hosts: a line for each of the pod's IPs (regression: a dual-stack pod's second was left
 * out).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeHostsFile } from '../../../src/agent/runtime/pod-files.js';
import type { Pod } from '../../../src/api/types.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-hosts-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the managed hosts file', () => {
  it("names the pod's host at each of its IPs, both families of a dual-stack pod, as upstream", async () => {
    const pod: Pod = {
      metadata: { name: 'web', namespace: 'default', uid: 'u-hosts' },
      spec: { hostname: 'web', subdomain: 'svc', containers: [{ name: 'main', image: 'busybox' }] },
    };
    const path = await writeHostsFile(pod, ['10.244.0.5', 'fd00:10:244::5'], {
      rootDir: dir,
      clusterDomain: 'cluster.local',
    });
    const lines = readFileSync(path, 'utf8').split('\n');
    expect(lines).toContain('10.244.0.5\tweb.svc.default.svc.cluster.local\tweb');
    expect(lines).toContain('fd00:10:244::5\tweb.svc.default.svc.cluster.local\tweb');
  });
});
