/**
 * Pod certificates for projected `podCertificate` sources (PodCertificateRequest, beta and off by default in v1.36),
 * as upstream's IssuingManager: for each source of each pod, a key of the asked type and a PodCertificateRequest
 * (certificates.k8s.io/v1beta1, named `req-…`, owned by the pod) naming the pod, its service account and the node with
 * their UIDs, the public key and the proof of possession; the node's requests are kept by a watch
 * (`spec.nodeName=<node>`); once a signer issues the request, the key and the certificate chain are the volume's, and
 * they are refreshed from the request's `beginRefreshAt`. The steps are pod-certificate-states.ts's; they are taken
 * when the volume is set up, which projected volumes are on every pod sync, and a change to a pod's request syncs it.
 */
import type { Pod } from '../../api/types.js';
import type { Clock } from '../../lib/clock.js';
import { allFromPem, toPem } from '../../lib/der.js';
import { messageOf } from '../../lib/errors.js';
import { apiError, type KubeClient } from '../../lib/kube-client.js';
import { ListWatch } from '../../lib/list-watch.js';
import type { Logger } from '../../lib/logger.js';
import { podRef, type EventSink } from '../events/recorder.js';
import { podCertificateKey } from './pod-certificate-keys.js';
import {
  ASSUME_DELETED_MS,
  JITTER_MS,
  metricsState,
  stepCredentials,
  type CredentialState,
  type PodCertificateRequest,
} from './pod-certificate-states.js';

/** A projected volume's `podCertificate` source. */
export interface PodCertificateProjection {
  signerName: string;
  keyType: string;
  maxExpirationSeconds?: number;
  credentialBundlePath?: string;
  keyPath?: string;
  certificateChainPath?: string;
  userAnnotations?: Record<string, string>;
}

/** Where a projected volume gets a pod's certificate. */
export interface PodCertificates {
  /** The key (PKCS#8 PEM) and certificate chain of source `sourceIndex` of volume `volumeName`; throws until issued. */
  credentials(
    pod: Pod,
    volumeName: string,
    sourceIndex: number,
    source: PodCertificateProjection,
  ): Promise<{ privateKeyPem: string; certificateChain: string }>;
  /** Drops what is kept for a pod that is gone. */
  forgetPod(uid: string): void;
}

/** Upstream's NoOpManager: no apiserver, or the PodCertificateRequest gate off. */
export const noPodCertificates: PodCertificates = {
  credentials: () => Promise.reject(new Error('unimplemented')),
  forgetPod: () => {},
};

const REQUESTS_PATH = '/apis/certificates.k8s.io/v1beta1';

/** The certificate blocks of a chain, nothing else (upstream's cleanCertificateChain). Pure. */
export function cleanCertificateChain(chain: string): string {
  return allFromPem(chain)
    .map((der) => toPem('CERTIFICATE', der))
    .join('');
}

/** The issuing manager. */
export class PodCertificateManager implements PodCertificates {
  /** By `<pod uid>/<volume>/<source index>`, with the source's signer. */
  private readonly states = new Map<string, { signerName: string; state: CredentialState }>();
  /** One step at a time per source: a second caller waits for the first's request instead of making another. */
  private readonly steps = new Map<string, Promise<unknown>>();
  /** The node's requests, by `<namespace>/<name>`. */
  private requests = new Map<string, PodCertificateRequest>();

  constructor(
    private readonly deps: {
      client: KubeClient;
      clock: Clock;
      logger: Logger;
      events: EventSink;
      nodeName: string;
      /** Told which pods' requests changed (their syncs take the next step at once). */
      onRequestChange?(podUids: string[]): void;
      /** [0, 1), for the jitter (Math.random when absent). */
      random?: () => number;
    },
  ) {}

  /** Watches the node's requests until `signal` aborts. */
  start(signal: AbortSignal): void {
    const { client, clock, logger, nodeName } = this.deps;
    new ListWatch<PodCertificateRequest>({
      client,
      path: `${REQUESTS_PATH}/podcertificaterequests`,
      fieldSelector: `spec.nodeName=${nodeName}`,
      clock,
      logger,
    }).start({
      signal,
      onSnapshot: (items) => {
        const before = this.requests;
        this.requests = new Map(items.map((r) => [`${r.metadata.namespace ?? ''}/${r.metadata.name}`, r]));
        const changed = new Set<string>();
        for (const [key, r] of this.requests)
          if (before.get(key)?.metadata.resourceVersion !== r.metadata.resourceVersion && r.spec?.podUID)
            changed.add(r.spec.podUID);
        if (changed.size) this.deps.onRequestChange?.([...changed]);
      },
    });
  }

  credentials(
    pod: Pod,
    volumeName: string,
    sourceIndex: number,
    source: PodCertificateProjection,
  ): Promise<{ privateKeyPem: string; certificateChain: string }> {
    const key = `${pod.metadata.uid ?? ''}/${volumeName}/${sourceIndex}`;
    const run = (this.steps.get(key) ?? Promise.resolve()).catch(() => {}).then(() => this.step(key, pod, source));
    this.steps.set(key, run);
    void run
      .finally(() => {
        if (this.steps.get(key) === run) this.steps.delete(key);
      })
      .catch(() => {});
    return run;
  }

  /** How many sources are in each state, by signer (`kubelet_podcertificate_states`). */
  stateCounts(): { signerName: string; state: string; count: number }[] {
    const counts = new Map<string, { signerName: string; state: string; count: number }>();
    const nowMs = this.deps.clock.now();
    for (const { signerName, state } of this.states.values()) {
      const name = metricsState(state, nowMs);
      const key = `${signerName}\u0000${name}`;
      const entry = counts.get(key) ?? { signerName, state: name, count: 0 };
      entry.count++;
      counts.set(key, entry);
    }
    return [...counts.values()];
  }

  forgetPod(uid: string): void {
    for (const key of [...this.states.keys()]) if (key.startsWith(`${uid}/`)) this.states.delete(key);
  }

  private jitter(): number {
    return Math.floor((this.deps.random ?? Math.random)() * JITTER_MS);
  }

  private async step(
    key: string,
    pod: Pod,
    source: PodCertificateProjection,
  ): Promise<{ privateKeyPem: string; certificateChain: string }> {
    const namespace = pod.metadata.namespace ?? 'default';
    const step = stepCredentials(
      this.states.get(key)?.state ?? { kind: 'initial' },
      (name) => this.requests.get(`${namespace}/${name}`),
      this.deps.clock.now(),
      this.jitter(),
      cleanCertificateChain,
    );
    let state = step.state;
    for (const [reason, message] of step.events) this.deps.events.record(podRef(pod), 'Warning', reason, message);
    let error = step.error;
    if (step.create) {
      try {
        const made = await this.createRequest(pod, source);
        const abandonAtMs = Date.parse(made.createdAt) + ASSUME_DELETED_MS + this.jitter();
        state =
          state.kind === 'fresh'
            ? {
                ...state,
                kind: 'waitRefresh',
                refreshKeyPem: made.privateKeyPem,
                refreshRequestName: made.name,
                refreshAbandonAtMs: abandonAtMs,
              }
            : { kind: 'wait', privateKeyPem: made.privateKeyPem, requestName: made.name, abandonAtMs };
      } catch (err) {
        // The volume keeps what it had; without credentials its FailedMount says why none could be asked for.
        this.deps.logger.warn(
          { pod: `${namespace}/${pod.metadata.name}`, err: messageOf(err) },
          'PodCertificateRequest not created',
        );
        if (!step.credentials) error = `while creating ${step.create} PodCertificateRequest: ${messageOf(err)}`;
      }
    }
    this.states.set(key, { signerName: source.signerName, state });
    if (step.credentials) return step.credentials;
    throw new Error(error);
  }

  /** Makes a request for `pod` (upstream's createPodCertificateRequest, with the UIDs it reads first). */
  private async createRequest(
    pod: Pod,
    source: PodCertificateProjection,
  ): Promise<{ name: string; privateKeyPem: string; createdAt: string }> {
    const { client, nodeName } = this.deps;
    const namespace = pod.metadata.namespace ?? 'default';
    const serviceAccountName = (pod.spec.serviceAccountName as string | undefined) || 'default';
    const accountPath = `/api/v1/namespaces/${encodeURIComponent(namespace)}/serviceaccounts`;
    const account = await client.request<{ metadata?: { uid?: string } }>({
      path: `${accountPath}/${encodeURIComponent(serviceAccountName)}`,
    });
    if (account.status !== 200)
      throw new Error(`while fetching service account: ${messageOf(apiError('get', account))}`);
    // Read each time (once per source and refresh): a Node deleted and registered again has another UID.
    const node = await client.request<{ metadata?: { uid?: string } }>({
      path: `/api/v1/nodes/${encodeURIComponent(nodeName)}`,
    });
    if (node.status !== 200)
      throw new Error(`while getting node object from local cache: ${messageOf(apiError('get', node))}`);
    const key = await podCertificateKey(source.keyType, pod.metadata.uid ?? '');
    const created = await client.request<{ metadata?: { name?: string; creationTimestamp?: string } }>({
      method: 'POST',
      path: `${REQUESTS_PATH}/namespaces/${encodeURIComponent(namespace)}/podcertificaterequests`,
      body: {
        apiVersion: 'certificates.k8s.io/v1beta1',
        kind: 'PodCertificateRequest',
        metadata: {
          namespace,
          generateName: 'req-',
          // "v1": the core group has no prefix. Before v1.36 upstream wrote "core/v1", which the garbage collector
          // cannot map, so the requests outlived their pods (kubernetes/kubernetes#137008).
          ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: pod.metadata.name, uid: pod.metadata.uid }],
        },
        spec: {
          signerName: source.signerName,
          podName: pod.metadata.name,
          podUID: pod.metadata.uid,
          serviceAccountName,
          serviceAccountUID: account.body?.metadata?.uid,
          nodeName,
          nodeUID: node.body?.metadata?.uid,
          ...(source.maxExpirationSeconds !== undefined ? { maxExpirationSeconds: source.maxExpirationSeconds } : {}),
          pkixPublicKey: key.pkixPublicKey.toString('base64'),
          proofOfPossession: key.proofOfPossession.toString('base64'),
          ...(source.userAnnotations ? { unverifiedUserAnnotations: source.userAnnotations } : {}),
        },
      },
    });
    if (created.status !== 201 && created.status !== 200)
      throw new Error(`while creating on API: ${messageOf(apiError('create', created))}`);
    return {
      name: created.body?.metadata?.name ?? '',
      privateKeyPem: key.privateKeyPem,
      createdAt: created.body?.metadata?.creationTimestamp ?? new Date(this.deps.clock.now()).toISOString(),
    };
  }
}
