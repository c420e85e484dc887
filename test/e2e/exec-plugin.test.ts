/**
 * A kubelet whose kubeconfig names an exec credential plugin (as EKS-style nodes have), joining
 * the fake apiserver: the plugin — a real script — hands out the node's client certificate, the
 * kubelet registers its Node and keeps its Lease with it, and the plugin ran once (the credential
 * has no expiry and was never refused).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startCluster, type Cluster } from './cluster-helpers.js';
import { until } from './helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-exec-plugin-'));
const node = 'exec-node';
const plugin = join(dir, 'get-credential');
let c: Cluster;

beforeAll(async () => {
  c = await startCluster({
    dir,
    node,
    user: (client) => {
      const credential = JSON.stringify({
        apiVersion: 'client.authentication.k8s.io/v1',
        kind: 'ExecCredential',
        status: { clientCertificateData: client.cert, clientKeyData: client.key },
      });
      writeFileSync(plugin, `#!/bin/sh\necho run >> "$0.runs"\ncat <<'EOF_CRED'\n${credential}\nEOF_CRED\n`);
      chmodSync(plugin, 0o755);
      return '{exec: {apiVersion: client.authentication.k8s.io/v1, command: ./get-credential, interactiveMode: Never}}';
    },
  });
}, 30_000);
afterAll(async () => {
  await c?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('an exec credential plugin in the kubeconfig', () => {
  it('gives the kubelet its client certificate: the Node registers and its Lease is kept, the plugin ran once', async () => {
    const registered = await until(() => c.api.store.get('nodes', '', node), 20_000, 'node registered');
    expect(registered.metadata.name).toBe(node);
    await until(() => c.api.store.get('coordination.k8s.io/leases', 'kube-node-lease', node), 20_000, 'lease');
    expect(readFileSync(`${plugin}.runs`, 'utf8').trim().split('\n')).toEqual(['run']);
  });
});
