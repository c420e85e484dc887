/**
 * The kubelet's serving certificate from the cluster (`serverTLSBootstrap` /
 * `--rotate-server-certificates`; upstream's kubelet serving certificate manager): a CSR for
 * `CN=system:node:<node>`, `O=system:nodes` with the node's hostname and IP as SANs, signer
 * `kubernetes.io/kubelet-serving`, usages digital signature + server auth (+ key encipherment for
 * RSA keys). Someone must approve it (`kubectl certificate approve`, or an approver controller),
 * as upstream. The signed certificate and its key go to `<cert-dir>/kubelet-server-<time>.pem`
 * with the `kubelet-server-current.pem` link, which the secure port serves (and reloads when the
 * link moves). It is requested again at a jittered 70–90 % of its lifetime, and when none is valid.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Clock } from '../../lib/clock.js';
import type { Logger } from '../../lib/logger.js';
import type { KubeClient } from '../../lib/kube-client.js';
import { certValidity, KUBELET_SERVING_SIGNER, kubeletServingUsages, nodeCsr } from './csr.js';
import { runRotationLoop, type RotationStatus } from './rotation-loop.js';
import { requestCertificate, storePem } from './client-cert.js';

/** The link to the current serving certificate and key (one PEM file) under the cert dir. */
export function servingPemPath(certDir: string): string {
  return join(certDir, 'kubelet-server-current.pem');
}

/** The current serving certificate's validity, when there is one that can be read. */
async function currentValidity(certDir: string): Promise<{ notBefore: number; notAfter: number } | undefined> {
  const pem = await readFile(servingPemPath(certDir), 'utf8').catch(() => undefined);
  return pem ? certValidity(pem) : undefined;
}

/** Whether the cert dir holds a serving certificate valid at `nowMs`. */
export async function hasValidServingCert(certDir: string, nowMs: number): Promise<boolean> {
  const v = await currentValidity(certDir);
  return !!v && v.notBefore <= nowMs && nowMs < v.notAfter;
}

/** Requests serving certificates: when none is valid, and again before the current one expires. */
export class ServingCertManager {
  /** Certificates stored (tests). */
  issued = 0;
  /** The current certificate's expiry and the failed requests (the certificate manager metrics). */
  readonly status: RotationStatus = { renewFailures: 0 };
  constructor(
    private readonly deps: {
      client: KubeClient;
      certDir: string;
      nodeName: string;
      /** The node's names and addresses for the SANs. */
      sans: { dns: string[]; ips: string[] };
      clock: Clock;
      logger: Logger;
      jitter?: () => number;
      /** How often a pending CSR is looked at (default 1 s). */
      pollMs?: number;
    },
  ) {}

  /**
   * Runs until `signal` aborts; `onCertificate(path)` after each certificate stored. Never throws (failures retry with
   * backoff up to 1 min).
   */
  start({ signal }: { signal: AbortSignal }, onCertificate: (path: string) => void): void {
    runRotationLoop({
      signal,
      clock: this.deps.clock,
      logger: this.deps.logger,
      jitter: this.deps.jitter,
      validity: () => currentValidity(this.deps.certDir),
      whenMissing: 'request',
      failure: 'kubelet serving certificate request failed; will retry',
      status: this.status,
      renew: async () => {
        const { keyPem, csrPem } = await nodeCsr(this.deps.nodeName, undefined, this.deps.sans);
        this.deps.logger.info(
          { signer: KUBELET_SERVING_SIGNER },
          'requesting a kubelet serving certificate (it needs an approval)',
        );
        const certPem = await requestCertificate(this.deps.client, csrPem, {
          usages: kubeletServingUsages(keyPem),
          signer: KUBELET_SERVING_SIGNER,
          clock: this.deps.clock,
          signal,
          pollMs: this.deps.pollMs,
        });
        const path = await storePem(this.deps.certDir, {
          certPem,
          keyPem,
          nowMs: this.deps.clock.now(),
          kind: 'server',
        });
        this.issued++;
        this.deps.logger.info(
          { notAfter: new Date(certValidity(certPem)?.notAfter ?? 0).toISOString() },
          'stored a new kubelet serving certificate',
        );
        onCertificate(path);
      },
    });
  }
}
