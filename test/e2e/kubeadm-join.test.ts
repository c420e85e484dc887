/**
 * A node joined as `kubeadm join` leaves it (deployability issue): kubeadm's
 * /var/lib/kubelet/config.yaml (its defaults: zero durations, webhook authn/authz, the cluster CA
 * as client CA, rotateCertificates, cgroupDriver systemd), kubeadm-flags.env,
 * /etc/kubernetes/bootstrap-kubelet.conf with a bootstrap token, and /etc/default/kubelet; the
 * kubelet runs with the command line the systemd drop-in (packaging/systemd) builds from them.
 * It files a CSR, which the cluster signs; writes /var/lib/kubelet/pki/kubelet-client-current.pem
 * (a link to the dated pem) and /etc/kubernetes/kubelet.conf pointing at it (what kubeadm join
 * waits for); and its Node becomes Ready. The node's filesystem is a directory of the test's.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { createCa, issueCert, type PemPair } from '../../src/server/pki.js';
import { startFakeKubeApiserver, type FakeKubeApiserver } from '../fixtures/apiserver/server.js';
import { startCsrSigner } from '../fixtures/apiserver/csr-signer.js';
import { BOOTSTRAP_TOKEN } from './cluster-helpers.js';
import { freeKubeletPorts, repoRoot, startKubelet, unmountTestMounts, until, type Kubelet } from './helpers.js';

const node = 'kubeadm-node';
/** The node's filesystem root: /etc/kubernetes and /var/lib/kubelet live under it. */
const fsRoot = mkdtempSync(join(tmpdir(), 'tsk-kubeadm-'));
const at = (path: string) => join(fsRoot, path);
let api: FakeKubeApiserver;
let ca: PemPair;
let stopSigner = () => {};
let kubelet: Kubelet | undefined;

/** kubeadm's config.yaml for a joining node (v1.3x), its paths under the test's root. */
const kubeadmConfig = () => `apiVersion: kubelet.config.k8s.io/v1beta1
authentication:
  anonymous:
    enabled: false
  webhook:
    cacheTTL: 0s
    enabled: true
  x509:
    clientCAFile: ${at('etc/kubernetes/pki/ca.crt')}
authorization:
  mode: Webhook
  webhook:
    cacheAuthorizedTTL: 0s
    cacheUnauthorizedTTL: 0s
cgroupDriver: systemd
clusterDNS:
- 10.96.0.10
clusterDomain: cluster.local
containerRuntimeEndpoint: ""
cpuManagerReconcilePeriod: 0s
crashLoopBackOff: {}
evictionPressureTransitionPeriod: 0s
fileCheckFrequency: 0s
healthzBindAddress: 127.0.0.1
healthzPort: 10248
httpCheckFrequency: 0s
imageMaximumGCAge: 0s
imageMinimumGCAge: 0s
kind: KubeletConfiguration
logging:
  flushFrequency: 0
  options:
    json:
      infoBufferSize: "0"
    text:
      infoBufferSize: "0"
  verbosity: 0
memorySwap: {}
nodeStatusReportFrequency: 0s
nodeStatusUpdateFrequency: 0s
rotateCertificates: true
runtimeRequestTimeout: 0s
shutdownGracePeriod: 0s
shutdownGracePeriodCriticalPods: 0s
staticPodPath: ${at('etc/kubernetes/manifests')}
streamingConnectionIdleTimeout: 0s
syncFrequency: 0s
volumeStatsAggPeriod: 0s
`;

/**
 * The kubelet's command line as systemd builds it from the unit's drop-in: its Environment= and
 * EnvironmentFile= variables, then the last ExecStart= with each unquoted $VAR split into words.
 */
function commandLineFromDropIn(dropIn: string, rewrite: (text: string) => string): string[] {
  const env: Record<string, string> = {};
  let exec = '';
  for (const line of rewrite(dropIn).split('\n')) {
    const environment = /^Environment="([A-Z_]+)=(.*)"$/.exec(line);
    if (environment) env[environment[1]] = environment[2];
    const file = /^EnvironmentFile=(-?)(.+)$/.exec(line);
    if (file) {
      let text: string;
      try {
        text = readFileSync(file[2], 'utf8');
      } catch (err) {
        if (file[1] === '-') continue;
        throw err;
      }
      for (const m of text.matchAll(/^([A-Z_]+)=(?:"(.*)"|(.*))$/gm)) env[m[1]] = m[2] ?? m[3];
    }
    const start = /^ExecStart=(.*)$/.exec(line);
    if (start) exec = start[1];
  }
  const words = exec.split(/\s+/).filter(Boolean);
  return words
    .slice(1)
    .flatMap((w) => (w.startsWith('$') ? (env[w.slice(1)] ?? '').split(/\s+/).filter(Boolean) : [w]));
}

beforeAll(async () => {
  ca = await createCa('kubeadm-cluster-ca');
  const serving = await issueCert(ca, {
    cn: 'kube-apiserver',
    server: true,
    sans: { dns: ['localhost'], ips: ['127.0.0.1'] },
  });
  api = await startFakeKubeApiserver({
    serving,
    clientCa: ca.cert,
    tokens: { [BOOTSTRAP_TOKEN]: 'system:bootstrap:abcdef' },
    bookmarkMs: 500,
  });
  stopSigner = startCsrSigner(api, ca, { validSeconds: 3600 });
  // What kubeadm join writes before it starts the kubelet.
  for (const d of ['etc/kubernetes/pki', 'etc/kubernetes/manifests', 'var/lib/kubelet', 'etc/default'])
    mkdirSync(at(d), { recursive: true });
  writeFileSync(at('etc/kubernetes/pki/ca.crt'), ca.cert);
  writeFileSync(
    at('etc/kubernetes/bootstrap-kubelet.conf'),
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- cluster:',
      `    certificate-authority: ${at('etc/kubernetes/pki/ca.crt')}`,
      `    server: ${api.url}`,
      '  name: kubernetes',
      'contexts:',
      '- context:',
      '    cluster: kubernetes',
      '    user: tls-bootstrap-token-user',
      '  name: tls-bootstrap-token-user@kubernetes',
      'current-context: tls-bootstrap-token-user@kubernetes',
      'users:',
      '- name: tls-bootstrap-token-user',
      '  user:',
      `    token: ${BOOTSTRAP_TOKEN}`,
      '',
    ].join('\n'),
  );
  writeFileSync(at('var/lib/kubelet/config.yaml'), kubeadmConfig());
  // kubeadm's flags for this node (no containerd here: the embedded runtime runs its pods).
  writeFileSync(at('var/lib/kubelet/kubeadm-flags.env'), 'KUBELET_KUBEADM_ARGS="--node-ip=127.0.0.1"\n');
}, 30_000);

afterAll(async () => {
  stopSigner();
  await kubelet?.stop();
  await api?.close();
  unmountTestMounts(fsRoot);
  rmSync(fsRoot, { recursive: true, force: true });
});

describe('kubeadm join', () => {
  it('bootstraps through the CSR API, writes kubelet.conf and the rotating pem link, and the Node becomes Ready', async () => {
    const ports = await freeKubeletPorts();
    // The operator's overrides (a test machine runs several kubelets): ports, name, and where the node's files are.
    writeFileSync(
      at('etc/default/kubelet'),
      `KUBELET_EXTRA_ARGS=--root-dir=${at('var/lib/kubelet')} --port=${ports.port} --read-only-port=${ports.ro} --healthz-port=${ports.hz} --hostname-override=${node} --fail-swap-on=false --pod-logs-dir=${at('var/log/pods')} --container-logs-dir=${at('var/log/containers')}\n`,
    );
    const dropIn = readFileSync(
      join(repoRoot, 'packaging', 'systemd', 'tskubelet.service.d', '10-kubeadm.conf'),
      'utf8',
    );
    const args = commandLineFromDropIn(dropIn, (text) =>
      text.replaceAll('/etc/', `${at('etc')}/`).replaceAll('/var/lib/kubelet', at('var/lib/kubelet')),
    );
    expect(args).toEqual(
      expect.arrayContaining([
        `--bootstrap-kubeconfig=${at('etc/kubernetes/bootstrap-kubelet.conf')}`,
        `--config=${at('var/lib/kubelet/config.yaml')}`,
        '--node-ip=127.0.0.1',
      ]),
    );
    kubelet = startKubelet(args);
    const csr = await until(
      () => api.store.list('certificates.k8s.io/certificatesigningrequests')[0],
      20_000,
      `a CSR\n${kubelet!.output()}`,
    );
    expect(csr.spec.signerName).toBe('kubernetes.io/kube-apiserver-client-kubelet');
    const kubeconfigPath = at('etc/kubernetes/kubelet.conf');
    const kubeconfig = await until(
      () => {
        try {
          return parse(readFileSync(kubeconfigPath, 'utf8')) as {
            users: { user: Record<string, string> }[];
            clusters: { cluster: { server: string } }[];
          };
        } catch {
          return undefined;
        }
      },
      20_000,
      'kubelet.conf',
    );
    const current = at('var/lib/kubelet/pki/kubelet-client-current.pem');
    expect(kubeconfig.users[0].user['client-certificate']).toBe(current);
    expect(kubeconfig.users[0].user['client-key']).toBe(current);
    expect(kubeconfig.clusters[0].cluster.server).toBe(api.url);
    expect(lstatSync(current).isSymbolicLink()).toBe(true);
    expect(readlinkSync(current)).toMatch(/kubelet-client-\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2}\.pem$/);
    const ready = await until(
      () =>
        api.store
          .get('nodes', '', node)
          ?.status?.conditions?.find(
            (c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True',
          ),
      30_000,
      'Node Ready',
    );
    expect(ready).toBeTruthy();
  }, 60_000);
});
