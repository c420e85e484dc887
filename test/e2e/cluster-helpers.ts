/**
 * A kubelet joined to the fake apiserver: a cluster CA, the apiserver's serving certificate, the
 * kubelet's client certificate (system:node:<node> in system:nodes) in a kubeconfig, a config
 * file, and kubectl with an admin token. The real CLI runs as a child process.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createCa, issueCert, type PemPair } from '../../src/server/pki.js';
import { startFakeKubeApiserver, type FakeKubeApiserver } from '../fixtures/apiserver/server.js';
import { startCsrSigner } from '../fixtures/apiserver/csr-signer.js';
import {
  freeKubeletPorts,
  kubeletArgs,
  startKubelet,
  unmountTestMounts,
  type Kubelet,
  type KubeletPorts,
} from './helpers.js';

/** A joined kubelet and its cluster. */
export interface Cluster {
  api: FakeKubeApiserver;
  kubelet: Kubelet;
  ports: KubeletPorts;
  ca: PemPair;
  dir: string;
  manifests: string;
  kubectlConfig: string;
  kubeconfig: string;
  /** Stops the kubelet, runs `whileDown`, starts it again. */
  restartKubelet(whileDown?: () => void | Promise<void>): Promise<void>;
  close(): Promise<void>;
  /** Starts the CSR signer of a cluster made with `bootstrap.paused`. */ startSigning(): void;
}

const b64 = (s: string) => Buffer.from(s).toString('base64');
const ADMIN_TOKEN = 'admin-token-for-kubectl';
/** The bootstrap token (kubeadm's format) and the user it maps to. */
export const BOOTSTRAP_TOKEN = 'abcdef.0123456789abcdef';

/**
 * Starts the fake apiserver and a kubelet with `config` (YAML lines added to the config file) and
 * `extra` flags. With `bootstrap`, the kubelet gets only a bootstrap kubeconfig (a token) and the
 * cluster signs its CSRs for `validSeconds`.
 */
export async function startCluster(o: {
  dir: string;
  node: string;
  config?: string[];
  extra?: string[];
  bootstrap?: { validSeconds: number; paused?: boolean; servingValidSeconds?: number };
  /** The kubeconfig's user stanza (YAML flow), given the kubelet's client certificate and key; default: them inline. */
  user?: (client: PemPair) => string;
  /** How often each watch gets a BOOKMARK (default 500 ms; a kube-apiserver sends about one a minute). */
  bookmarkMs?: number;
  /** The apiserver speaks HTTP/1.1 only (the kubelet's client then uses it; benches compare the two). */
  http1Only?: boolean;
  /** Added to the kubelet's environment. */
  env?: Record<string, string>;
}): Promise<Cluster> {
  const ca = await createCa('test-cluster-ca');
  const serving = await issueCert(ca, {
    cn: 'kube-apiserver',
    server: true,
    sans: { dns: ['localhost'], ips: ['127.0.0.1'] },
  });
  const client = await issueCert(ca, { cn: `system:node:${o.node}`, org: 'system:nodes' });
  const api = await startFakeKubeApiserver({
    serving,
    clientCa: ca.cert,
    tokens: { [ADMIN_TOKEN]: 'admin', [BOOTSTRAP_TOKEN]: 'system:bootstrap:abcdef' },
    bookmarkMs: o.bookmarkMs ?? 500,
    http1Only: o.http1Only,
  });
  let stopSigner = o.bootstrap && !o.bootstrap.paused ? startCsrSigner(api, ca, o.bootstrap) : () => {};
  const manifests = join(o.dir, 'manifests');
  mkdirSync(manifests, { recursive: true });
  const kubeconfig = join(o.dir, 'kubelet.kubeconfig');
  const kubeconfigText = (user: string) =>
    [
      'apiVersion: v1',
      'kind: Config',
      'current-context: c',
      `clusters: [{name: k, cluster: {server: "${api.url}", certificate-authority-data: ${b64(ca.cert)}}}]`,
      `users: [{name: u, user: ${user}}]`,
      'contexts: [{name: c, context: {cluster: k, user: u}}]',
      '',
    ].join('\n');
  const bootstrapArgs: string[] = [];
  if (o.bootstrap) {
    const boot = join(o.dir, 'bootstrap.kubeconfig');
    writeFileSync(boot, kubeconfigText(`{token: ${BOOTSTRAP_TOKEN}}`));
    bootstrapArgs.push('--bootstrap-kubeconfig', boot);
  } else
    writeFileSync(
      kubeconfig,
      kubeconfigText(
        o.user ? o.user(client) : `{client-certificate-data: ${b64(client.cert)}, client-key-data: ${b64(client.key)}}`,
      ),
    );
  const kubectlConfig = join(o.dir, 'admin.kubeconfig');
  writeFileSync(
    kubectlConfig,
    [
      'apiVersion: v1',
      'kind: Config',
      'current-context: c',
      `clusters: [{name: k, cluster: {server: "${api.url}", certificate-authority-data: ${b64(ca.cert)}}}]`,
      `users: [{name: u, user: {token: ${ADMIN_TOKEN}}}]`,
      'contexts: [{name: c, context: {cluster: k, user: u, namespace: default}}]',
      '',
    ].join('\n'),
  );
  writeFileSync(join(o.dir, 'ca.crt'), ca.cert);
  const config = join(o.dir, 'kubelet-config.yaml');
  writeFileSync(
    config,
    [
      'apiVersion: kubelet.config.k8s.io/v1beta1',
      'kind: KubeletConfiguration',
      `staticPodPath: ${manifests}`,
      'authentication: {x509: {clientCAFile: ca.crt}}',
      'fileCheckFrequency: 1s',
      ...(o.config ?? []),
      '',
    ].join('\n'),
  );
  const ports = await freeKubeletPorts();
  const args = kubeletArgs({
    dir: o.dir,
    ports,
    node: o.node,
    extra: [
      '--config',
      config,
      '--kubeconfig',
      kubeconfig,
      '--read-only-port',
      String(ports.ro),
      '--node-ip',
      '127.0.0.1',
      ...bootstrapArgs,
      ...(o.extra ?? []),
    ],
  });
  const cluster: Cluster = {
    api,
    kubelet: startKubelet(args, { env: o.env }),
    ports,
    ca,
    dir: o.dir,
    manifests,
    kubectlConfig,
    kubeconfig,
    async restartKubelet(whileDown) {
      await cluster.kubelet.stop();
      await whileDown?.();
      cluster.kubelet = startKubelet(args, { env: o.env });
    },
    async close() {
      stopSigner();
      await cluster.kubelet.stop();
      await api.close();
      unmountTestMounts(o.dir);
    },
    startSigning() {
      if (o.bootstrap) stopSigner = startCsrSigner(api, ca, o.bootstrap);
    },
  };
  return cluster;
}

/** Runs kubectl against the fake apiserver as admin. */
export function kubectl(
  c: Cluster,
  args: string[],
  timeoutMs = 30_000,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      'kubectl',
      args,
      { env: { ...process.env, KUBECONFIG: c.kubectlConfig }, timeout: timeoutMs },
      (err, stdout, stderr) => {
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

/** `kubectl patch pod <name> --subresource resize` with `patch` (an in-place resize, as a user asks for one). */
export function resizePod(c: Cluster, name: string, patch: object): ReturnType<typeof kubectl> {
  return kubectl(c, ['patch', 'pod', name, '--subresource', 'resize', '-p', JSON.stringify(patch)]);
}

/** A minimal pod bound to `node`. */
export function boundPod(
  name: string,
  node: string,
  spec: Record<string, unknown> = {},
  meta: Record<string, unknown> = {},
): Record<string, unknown> {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default', ...meta },
    spec: {
      nodeName: node,
      terminationGracePeriodSeconds: 2,
      containers: [{ name: 'main', image: 'busybox', command: ['sleep', '3600'] }],
      ...spec,
    },
  };
}
