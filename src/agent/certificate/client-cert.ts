/**
 * Kubelet client certificate bootstrap and rotation (upstream kubeletclientcertificate +
 * bootstrap.LoadClientCert):
 * 1. bootstrap — when `--kubeconfig` does not exist or its certificate has expired and a
 *    `--bootstrap-kubeconfig` is given: create a key and a CSR, POST it as the bootstrap identity,
 *    wait until it is signed (Denied / Failed end it), store `kubelet-client-<time>.pem` (cert +
 *    key, 0600) under the cert dir with the `kubelet-client-current.pem` link, and write the
 *    kubeconfig (the bootstrap cluster, the current pem as client certificate and key);
 * 2. rotation (`rotateCertificates`) — at a jittered 70–90 % of the lifetime, the same CSR flow
 *    as the node itself; the new pem replaces the link and the client reconnects with it.
 */
import { readFile, rename, symlink, unlink, mkdir } from 'node:fs/promises';
import { join, isAbsolute, dirname } from 'node:path';
import { stringify as stringifyYaml } from 'yaml';
import type { Clock } from '../../lib/clock.js';
import { sleep } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import { writeFileAtomic } from '../../lib/fs-util.js';
import { apiError, createKubeClient, type KubeClient } from '../../lib/kube-client.js';
import { loadKubeconfig } from '../../lib/kubeconfig.js';
import { certValidity, compatibleCsr, csrName, csrObject, kubeletClientUsages, nodeCsr } from './csr.js';
import { runRotationLoop, type RotationStatus } from './rotation-loop.js';
import { parseYamlBounded, readTextBounded } from '../../lib/bounded-yaml.js';

/** The parts of a CertificateSigningRequest this file reads. */
interface CsrObject {
  metadata: { name: string };
  spec?: { request?: string; signerName?: string; usages?: string[] };
  status?: { conditions?: { type: string; reason?: string; message?: string }[]; certificate?: string };
}
/** The parts of a kubeconfig this file reads. */
interface Kubeconfig {
  'current-context'?: string;
  contexts?: { name?: string; context?: { cluster?: string } }[];
  clusters?: { name?: string; cluster?: Record<string, unknown> }[];
  users?: { user?: { 'client-certificate-data'?: string; 'client-certificate'?: string } }[];
}

/** Where the files go. */
export interface ClientCertPaths {
  kubeconfig: string;
  bootstrapKubeconfig?: string;
  certDir: string;
}

/** Upstream's name for the key of a pending bootstrap CSR. */
const PENDING_KEY = 'kubelet-client.key.tmp';

/**
 * POSTs a CSR and waits for its certificate (PEM). With `name`, a CSR of that name that already
 * exists with the same request (a restart while it was pending) is waited for instead of filing
 * another, as upstream's RequestCertificate does.
 */
export async function requestCertificate(
  client: KubeClient,
  csrPem: string,
  o: {
    usages: string[];
    clock: Clock;
    signal?: AbortSignal;
    timeoutMs?: number;
    pollMs?: number;
    name?: string;
    signer?: string;
  },
): Promise<string> {
  const path = '/apis/certificates.k8s.io/v1/certificatesigningrequests';
  const created = await client.request<CsrObject>({
    method: 'POST',
    path,
    body: csrObject(csrPem, o.usages, o.name, o.signer),
    signal: o.signal,
  });
  let name: string;
  if (created.status === 201 && created.body) name = created.body.metadata.name;
  else if (created.status === 409 && o.name) {
    const existing = await client.request<CsrObject>({ path: `${path}/${o.name}`, signal: o.signal });
    if (
      existing.status !== 200 ||
      !existing.body ||
      !(await compatibleCsr(existing.body, { csrPem, usages: o.usages, signer: o.signer }))
    )
      throw new Error(`certificate signing request ${o.name} exists with a different request`);
    name = o.name;
  } else throw apiError('creating the certificate signing request', created);
  const end = o.clock.now() + (o.timeoutMs ?? 3_600_000);
  while (!o.signal?.aborted && o.clock.now() < end) {
    const r = await client.request<CsrObject>({
      path: `/apis/certificates.k8s.io/v1/certificatesigningrequests/${name}`,
      signal: o.signal,
    });
    const st = r.body?.status ?? {};
    const bad = (st.conditions ?? []).find((c) => c.type === 'Denied' || c.type === 'Failed');
    if (bad)
      throw new Error(
        `certificate signing request ${name} ${bad.type.toLowerCase()}: ${bad.reason ?? ''} ${bad.message ?? ''}`.trim(),
      );
    if (st.certificate) return Buffer.from(st.certificate, 'base64').toString('utf8');
    await sleep(o.pollMs ?? 1000, o.signal, o.clock);
  }
  throw new Error(`timed out waiting for certificate signing request ${name} to be signed`);
}

/**
 * The time in a stored pem's name, as client-go's certificate store writes it (Go layout 2006-01-02-15-04-05, local
 * time). Pure.
 */
export function pemTimestamp(nowMs: number): string {
  const d = new Date(nowMs);
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())}-${p(d.getHours())}-${p(d.getMinutes())}-${p(d.getSeconds())}`;
}

/**
 * Stores cert + key as a new `kubelet-<kind>-<time>.pem` and points `kubelet-<kind>-current.pem`
 * at it (upstream's certificate store); returns the link's path.
 */
export async function storePem(
  certDir: string,
  o: { certPem: string; keyPem: string; nowMs: number; kind?: 'client' | 'server' },
): Promise<string> {
  const { certPem, keyPem, nowMs } = o;
  const kind = o.kind ?? 'client';
  await mkdir(certDir, { recursive: true, mode: 0o700 });
  const stamp = pemTimestamp(nowMs);
  const file = join(certDir, `kubelet-${kind}-${stamp}.pem`);
  await writeFileAtomic(file, `${certPem.trim()}\n${keyPem.trim()}\n`, 0o600);
  const link = join(certDir, `kubelet-${kind}-current.pem`);
  const tmp = `${link}.tmp`;
  await unlink(tmp).catch(() => {});
  await symlink(file, tmp);
  await rename(tmp, link);
  return link;
}

/** The client certificate PEM the kubeconfig uses, if it can be read. */
function currentCert(kubeconfig: string): string | undefined {
  try {
    return loadKubeconfig(kubeconfig).tls.cert?.toString('utf8');
  } catch {
    return undefined;
  }
}

/** Bootstraps the kubeconfig when needed (step 1). Returns true when it did. */
export async function bootstrapClientCert(
  paths: ClientCertPaths,
  o: { nodeName: string; clock: Clock; logger: Logger; signal?: AbortSignal },
): Promise<boolean> {
  const cert = currentCert(paths.kubeconfig);
  const validity = cert ? certValidity(cert) : undefined;
  if (validity && validity.notAfter > o.clock.now()) return false;
  if (!paths.bootstrapKubeconfig) return false;
  o.logger.info(
    { kubeconfig: paths.kubeconfig },
    cert
      ? 'client certificate expired; bootstrapping a new one'
      : 'no kubeconfig yet; bootstrapping a client certificate',
  );
  const boot = await createKubeClient(paths.bootstrapKubeconfig, { timeoutMs: 10_000 });
  // As upstream: the private key waits in the cert dir until its certificate arrives, so a restart
  // while the CSR is pending sends the same request under the same name and picks it up.
  const keyFile = join(paths.certDir, PENDING_KEY);
  await mkdir(paths.certDir, { recursive: true, mode: 0o700 });
  const pendingKey = await readFile(keyFile, 'utf8').catch(() => undefined);
  const { keyPem, csrPem } = await nodeCsr(o.nodeName, pendingKey);
  if (!pendingKey) await writeFileAtomic(keyFile, keyPem, 0o600);
  const name = csrName(keyPem, {
    commonName: `system:node:${o.nodeName}`,
    organizations: ['system:nodes'],
    usages: kubeletClientUsages(keyPem),
  });
  const certPem = await requestCertificate(boot, csrPem, {
    usages: kubeletClientUsages(keyPem),
    clock: o.clock,
    signal: o.signal,
    name,
  });
  const link = await storePem(paths.certDir, { certPem, keyPem, nowMs: o.clock.now() });
  await unlink(keyFile).catch(() => {});
  const bootDoc = parseYamlBounded(await readTextBounded(paths.bootstrapKubeconfig)) as Kubeconfig;
  const ctxName = bootDoc['current-context'];
  const ctx = (bootDoc.contexts ?? []).find((c) => c.name === ctxName) ?? bootDoc.contexts?.[0];
  const cluster = (bootDoc.clusters ?? []).find((c) => c.name === ctx?.context?.cluster) ?? bootDoc.clusters?.[0];
  const clusterBody = { ...cluster?.cluster };
  const ca = clusterBody['certificate-authority'];
  if (typeof ca === 'string' && ca && !isAbsolute(ca))
    clusterBody['certificate-authority'] = join(dirname(paths.bootstrapKubeconfig), ca);
  await mkdir(dirname(paths.kubeconfig), { recursive: true });
  await writeFileAtomic(
    paths.kubeconfig,
    stringifyYaml({
      apiVersion: 'v1',
      kind: 'Config',
      'current-context': 'default-context',
      clusters: [{ name: 'default-cluster', cluster: clusterBody }],
      users: [{ name: 'default-auth', user: { 'client-certificate': link, 'client-key': link } }],
      contexts: [
        {
          name: 'default-context',
          context: { cluster: 'default-cluster', user: 'default-auth', namespace: 'default' },
        },
      ],
    }),
    0o600,
  );
  o.logger.info({ kubeconfig: paths.kubeconfig, cert: link }, 'client certificate bootstrapped');
  return true;
}

/** Rotates the client certificate before it expires (step 2); `client` reconnects after each rotation. */
export class ClientCertRotator {
  /** Rotations done (tests). */
  rotations = 0;
  /** The current certificate's expiry and the failed renewals (the certificate manager metrics). */
  readonly status: RotationStatus = { renewFailures: 0 };
  constructor(
    private readonly deps: {
      client: KubeClient;
      paths: ClientCertPaths;
      nodeName: string;
      clock: Clock;
      logger: Logger;
      jitter?: () => number;
    },
  ) {}

  /** Starts the rotation loop; never throws (failures retry with backoff up to 1 min). */
  start({ signal }: { signal: AbortSignal }): void {
    runRotationLoop({
      signal,
      clock: this.deps.clock,
      logger: this.deps.logger,
      jitter: this.deps.jitter,
      validity: async () => {
        const cert = currentCert(this.deps.paths.kubeconfig);
        return cert ? certValidity(cert) : undefined;
      },
      whenMissing: 'wait',
      failure: 'client certificate rotation failed; will retry',
      status: this.status,
      renew: async (v) => {
        const { keyPem, csrPem } = await nodeCsr(this.deps.nodeName);
        const certPem = await requestCertificate(this.deps.client, csrPem, {
          usages: kubeletClientUsages(keyPem),
          clock: this.deps.clock,
          signal,
          timeoutMs: Math.max(60_000, (v?.notAfter ?? 0) - this.deps.clock.now()),
        });
        await storePem(this.deps.paths.certDir, { certPem, keyPem, nowMs: this.deps.clock.now() });
        await this.deps.client.reload();
        this.rotations++;
        this.deps.logger.info(
          { notAfter: new Date(certValidity(certPem)?.notAfter ?? 0).toISOString() },
          'rotated the kubelet client certificate',
        );
      },
    });
  }
}
