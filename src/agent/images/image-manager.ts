/**
 * Makes sure a container's image is present according to its pull policy (upstream
 * images.imageManager.EnsureImageExists): ImageStatus first; Never → ErrImageNeverPull when
 * absent; a present image is never re-pulled unless Always; failed pulls back off per pod and
 * image (ErrImagePull, then ImagePullBackOff while waiting); with serializeImagePulls (the
 * default) one pull runs at a time, as upstream's serial puller, else at most maxParallelImagePulls
 * (no limit when unset); pulls beyond registryPullQPS / registryBurst fail at once with upstream's
 * "pull QPS exceeded" (and back off like any failed pull). With pull records (pull-records.ts,
 * KubeletEnsureSecretPulledImages) a present image is used by a pod only when the records or the
 * verification policy say it may; else it is pulled again with the pod's credentials.
 */
import type { Container, Pod } from '../../api/types.js';
import type { ImageService } from '../../cri/services.js';
import type * as cri from '../../cri/types.js';
import type { Clock } from '../../lib/clock.js';
import { messageOf } from '../../lib/errors.js';
import { goStatusText } from '../../cri/grpc-errors.js';
import { defaultPullPolicy } from '../../api/defaults.js';
import { BackoffTable, backoffRemaining } from '../sync/backoff.js';
import { podRef, type EventSink } from '../events/recorder.js';
import type { ObjectRef } from '../events/event.js';
import { credentialHash, secretOf, serviceAccountOf, type AuthConfig } from './keyring.js';
import {
  mustAttemptImagePull,
  type ImagePullCredentials,
  type MustPullCheckResult,
  type PullRecords,
  type PullSecretRef,
  type VerificationPolicy,
} from './pull-records.js';
import { Semaphore, type TokenBucket } from '../../lib/token-bucket.js';
import { aggregateMessage } from '../../lib/aggregate-message.js';

/** The outcome: the image to run (ref and what the runtime reports of it), or the waiting reason and message. */
export type EnsureImageResult =
  | { ok: true; imageRef: string; image: cri.Image | null; pulled: boolean }
  | {
      ok: false;
      reason: string;
      /** The container's waiting message. */
      message: string;
      /** The event's message where it differs (upstream's "Failed to pull image …" and "Back-off pulling image …"). */
      eventMessage?: string;
      retryAfterMs?: number;
    };

/** What the image manager needs. */
export interface ImageManagerDeps {
  images: ImageService;
  clock: Clock;
  serializeImagePulls: boolean;
  /** maxParallelImagePulls when pulls are not serialized (undefined: no limit). */
  maxParallelImagePulls?: number;
  /** registryPullQPS / registryBurst (undefined: no limit). */
  pullLimiter?: TokenBucket;
  events?: EventSink;
  /** The pull records and the verification policy (KubeletEnsureSecretPulledImages); absent: off. */
  pullRecords?: { records: PullRecords; policy: VerificationPolicy; allowlist: readonly string[] };
  /**
   * Told when a pod's image pull starts and when it has succeeded (the pod startup SLI leaves pulls out), and how long
   * a pull took, waiting included, and the image's size.
   */
  pullTimes?: {
    startedPulling(uid: string): void;
    finishedPulling(uid: string): void;
    pulled?(seconds: number, sizeBytes: number): void;
  };
  /** Told of each request and check, as upstream counts them (kubelet_image_manager_*, kubelet_imagemanager_*). */
  requests?: ImageRequestCounters;
}

/**
 * Upstream's counts of the image manager's work: each EnsureImageExists (its pull policy, lower-cased; whether the
 * image was there and a pull was needed, undefined when an error came before it was known), and each check of a
 * present image's records (MustAttemptImagePull).
 */
export interface ImageRequestCounters {
  ensured(r: { pullPolicy: string; presentLocally?: boolean; pullRequired?: boolean }): void;
  mustPullChecked(result: MustPullCheckResult): void;
}

/** `f` run at most once, its promise shared. */
function once<T>(f: () => Promise<T>): () => Promise<T> {
  let result: Promise<T> | undefined;
  return () => (result ??= f());
}

/**
 * What a pull record keeps of the credential a pull used: the pull secret it came from, the
 * service account whose token a credential provider was given, or neither (anonymous, or the
 * node's own credentials: any pod may use the image).
 */
function pullCredentials(used: AuthConfig | undefined): ImagePullCredentials {
  const secret = used && secretOf(used);
  if (secret) return { kubernetesSecrets: [{ ...secret, credentialHash: credentialHash(used!) }] };
  const account = used && serviceAccountOf(used);
  if (account) return { kubernetesServiceAccounts: [account] };
  return { nodePodsAccessible: true };
}

/** The event reason of a failure, as upstream's image manager records it (events.go); others are "Failed". */
const FAILURE_EVENT_REASONS: Record<string, string> = {
  ErrImageNeverPull: 'ErrImageNeverPull',
  ErrImageInspect: 'InspectFailed',
};

/** How an image is pulled, when it has to be. */
interface PullOptions {
  sandboxConfig?: cri.PodSandboxConfig;
  /** The credentials to try for its registry, in order; a function is asked only when a pull is needed. */
  auth?: AuthConfig[] | (() => Promise<AuthConfig[]>);
  /** Called just before the image is pulled, when it is. */
  onPull?: () => void;
}

/** Pulls images per policy. */
export class ImageManager {
  private readonly backoff = new BackoffTable();
  /**
   * Each backed-off pull's last error (`ErrImagePull: …`, by backoff key), which the ImagePullBackOff
   * message carries as upstream's prevPullErrMsg; dropped when the pull is tried again.
   */
  private readonly lastPullErrors = new Map<string, string>();
  private readonly pulls: Semaphore;
  constructor(private readonly deps: ImageManagerDeps) {
    this.pulls = new Semaphore(deps.serializeImagePulls ? 1 : (deps.maxParallelImagePulls ?? 0));
  }

  /** The pull records it keeps (KubeletEnsureSecretPulledImages), when it keeps them. */
  get pullRecords(): PullRecords | undefined {
    return this.deps.pullRecords?.records;
  }

  private pull(
    spec: cri.ImageSpec,
    auth: AuthConfig | undefined,
    sandboxConfig?: cri.PodSandboxConfig,
  ): Promise<string> {
    // Upstream's throttled image service refuses at once rather than queueing.
    if (this.deps.pullLimiter && !this.deps.pullLimiter.tryTake())
      return Promise.reject(new Error('pull QPS exceeded'));
    return this.pulls.run(() => this.deps.images.pullImage(spec, auth, sandboxConfig));
  }

  /**
   * Ensures the image of `c`; `auth` lists the credentials to try for its registry (pull secrets,
   * then credential providers), in order — a function is asked only when a pull is needed.
   */
  async ensureImageExists(
    pod: Pod,
    c: Container,
    o: PullOptions & {
      init?: boolean;
      /** The object the events name: the container's by default; the pod's for an image volume, as upstream. */
      objectRef?: ObjectRef;
    } = {},
  ): Promise<EnsureImageResult> {
    const ref = o.objectRef ?? podRef(pod, { name: c.name, init: o.init });
    const r = await this.ensure(pod, c, o, ref);
    const ev = this.deps.events;
    if (ev) {
      if (r.ok && !r.pulled)
        ev.record(
          ref,
          'Normal',
          'Pulled',
          this.deps.pullRecords
            ? `Container image "${c.image}" already present on machine and can be accessed by the pod`
            : `Container image "${c.image}" already present on machine`,
        );
      else if (!r.ok && r.reason === 'ImagePullBackOff') {
        ev.record(ref, 'Normal', 'BackOff', r.eventMessage ?? r.message);
        ev.record(ref, 'Warning', 'Failed', `Error: ${r.reason}`);
      } else if (!r.ok) {
        ev.record(ref, 'Warning', FAILURE_EVENT_REASONS[r.reason] ?? 'Failed', r.eventMessage ?? r.message);
        ev.record(ref, 'Warning', 'Failed', `Error: ${r.reason}`);
      }
    }
    return r;
  }

  private async ensure(
    pod: Pod,
    c: Container,
    o: PullOptions,
    /** The object the pull's events name. */
    eventRef: ObjectRef,
  ): Promise<EnsureImageResult> {
    const image = c.image ?? '';
    const policy = c.imagePullPolicy ?? defaultPullPolicy(image);
    // What upstream's recordEnsureImageRequest reports of this request, whichever way it ends.
    const request: { pullPolicy: string; presentLocally?: boolean; pullRequired?: boolean } = {
      pullPolicy: policy.toLowerCase(),
    };
    try {
      return await this.ensureAs(pod, image, policy, o, eventRef, request);
    } finally {
      this.deps.requests?.ensured(request);
    }
  }

  private async ensureAs(
    pod: Pod,
    image: string,
    policy: string,
    o: PullOptions,
    eventRef: ObjectRef,
    request: { presentLocally?: boolean; pullRequired?: boolean },
  ): Promise<EnsureImageResult> {
    const spec: cri.ImageSpec = { image, user_specified_image: image };
    let present: cri.Image | null = null;
    try {
      present = await this.deps.images.imageStatus(spec);
    } catch (err) {
      return {
        ok: false,
        reason: 'ErrImageInspect',
        message: `Failed to inspect image "${image}": ${goStatusText(err)}`,
      };
    }
    request.presentLocally = !!present;
    const credentials = once(async () => (typeof o.auth === 'function' ? await o.auth() : (o.auth ?? [])));
    request.pullRequired =
      !present || policy === 'Always' || (await this.mustPullAgain(image, present.id, credentials));
    if (!request.pullRequired) return { ok: true, imageRef: present!.id, image: present!, pulled: false };
    // Present but not shown to be the pod's to use: Never cannot pull it (upstream's message, as for an absent image).
    if (policy === 'Never') {
      return {
        ok: false,
        reason: 'ErrImageNeverPull',
        message: `Container image "${image}" is not present with pull policy of Never`,
      };
    }
    const key = `${pod.metadata.uid}/${image}`;
    // The pull backoff is a wait: on the monotonic clock, as upstream's flowcontrol.Backoff.
    const now = this.deps.clock.monotonic();
    const entry = this.backoff.snapshot().get(key);
    const remaining = entry ? backoffRemaining(entry, entry.lastUpdateMs, now) : 0;
    if (remaining > 0) {
      const eventMessage = `Back-off pulling image "${image}"`;
      const previous = this.lastPullErrors.get(key);
      return {
        ok: false,
        reason: 'ImagePullBackOff',
        message: previous === undefined ? eventMessage : `${eventMessage}: ${previous}`,
        eventMessage,
        retryAfterMs: remaining,
      };
    }
    this.lastPullErrors.delete(key);
    const started = this.deps.clock.monotonic();
    o.onPull?.();
    this.deps.events?.record(eventRef, 'Normal', 'Pulling', `Pulling image "${image}"`);
    this.deps.pullTimes?.startedPulling(pod.metadata.uid!);
    const records = this.deps.pullRecords?.records;
    let intent = false;
    try {
      let ref = '';
      let used: AuthConfig | undefined;
      const creds = await credentials();
      const tries = creds.length ? creds : [undefined];
      if (records) {
        await records.beginPull(image);
        intent = true;
      }
      const failures: string[] = [];
      for (const auth of tries) {
        try {
          ref = await this.pull(spec, auth, o.sandboxConfig);
          used = auth;
          break;
        } catch (err) {
          failures.push(goStatusText(err));
        }
      }
      // Every credential failed: upstream's aggregate of their errors (one alone as it is).
      if (failures.length === tries.length) throw new Error(aggregateMessage(failures));
      if (records) {
        intent = false;
        await records
          .endPull(image, { imageRef: ref || image, credentials: pullCredentials(used) })
          .catch(() => undefined);
      }
      this.deps.pullTimes?.finishedPulling(pod.metadata.uid!);
      const pulled = await this.deps.images.imageStatus({ image: ref || image }).catch(() => null);
      const seconds = (this.deps.clock.monotonic() - started) / 1000;
      this.deps.pullTimes?.pulled?.(seconds, Number(pulled?.size ?? 0));
      const secs = seconds.toFixed(3);
      this.deps.events?.record(
        eventRef,
        'Normal',
        'Pulled',
        `Successfully pulled image "${image}" in ${secs}s (${secs}s including waiting).${pulled ? ` Image size: ${pulled.size} bytes.` : ''}`,
      );
      return { ok: true, imageRef: ref || image, image: pulled, pulled: true };
    } catch (err) {
      if (intent) await records!.endPull(image).catch(() => undefined);
      this.backoff.next(key, now, now);
      const message = messageOf(err);
      this.lastPullErrors.set(key, `ErrImagePull: ${message}`);
      return {
        ok: false,
        reason: 'ErrImagePull',
        message,
        eventMessage: `Failed to pull image "${image}": ${message}`,
        retryAfterMs: this.backoff.snapshot().get(key)!.delayMs,
      };
    }
  }

  /**
   * Whether a present image must be pulled again for this pod to use it (upstream
   * MustAttemptImagePull); a secret that matched by its credentials or its identity only is added
   * to the record. Without pull records: never.
   */
  private async mustPullAgain(
    image: string,
    imageRef: string,
    credentials: () => Promise<AuthConfig[]>,
  ): Promise<boolean> {
    const pr = this.deps.pullRecords;
    if (!pr) return false;
    let record: Awaited<ReturnType<PullRecords['record']>>;
    let intentExists: boolean;
    try {
      [record, intentExists] = await Promise.all([pr.records.record(imageRef), pr.records.intentExists(image)]);
    } catch {
      // Records that cannot be read show nothing: the pod proves its access by a pull, as upstream's.
      this.deps.requests?.mustPullChecked('error');
      return true;
    }
    const auths = await credentials();
    const podSecrets: PullSecretRef[] = auths.flatMap((auth) => {
      const source = secretOf(auth);
      return source ? [{ ...source, credentialHash: credentialHash(auth) }] : [];
    });
    const decision = mustAttemptImagePull({
      policy: pr.policy,
      allowlist: pr.allowlist,
      image,
      record,
      intentExists,
      podSecrets,
      podServiceAccounts: auths.flatMap((auth) => serviceAccountOf(auth) ?? []),
    });
    this.deps.requests?.mustPullChecked(decision.result);
    if (decision.remember)
      await pr.records.remember(image, imageRef, { kubernetesSecrets: [decision.remember] }).catch(() => undefined);
    return decision.pull;
  }

  /** Forgets a pod's pull backoff. */
  forgetPod(uid: string): void {
    this.backoff.forgetPod(uid);
    for (const key of this.lastPullErrors.keys()) if (key.startsWith(`${uid}/`)) this.lastPullErrors.delete(key);
  }
}
