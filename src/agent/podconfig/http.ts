/**
 * The static pod URL source: GETs `url` every `periodMs` (with the configured extra headers) and
 * decodes a Pod or PodList. An unreachable URL or a bad body is reported and the last good set is
 * kept; an empty 2xx body means no pods.
 */
import type { Pod } from '../../api/types.js';
import type { Logger } from '../../lib/logger.js';
import type { Clock } from '../../lib/clock.js';
import { messageOf } from '../../lib/errors.js';
import { MAX_MANIFEST_BYTES } from './decode.js';
import { decodeManifestsOffThread, type ManifestDecoder } from './decode-off-thread.js';
import { getText } from '../../lib/http-get.js';

import { namedStaticPods, toStaticPod } from './static-pod.js';
import type { PodSource } from './types.js';

/** What the URL source needs. */
export interface HttpSourceDeps {
  url: string;
  headers: Record<string, string[]>;
  nodeName: string;
  periodMs: number;
  logger: Logger;
  clock: Clock;
  /** Decodes long manifest text off the event loop (default decodeManifestsOffThread). */
  decode?: ManifestDecoder;
}

/** PodSource over a manifest URL. */
export class HttpSource implements PodSource {
  readonly name = 'http';
  private lastBody: string | undefined;
  private lastError: string | undefined;
  /** The last body that failed to decode, and why: the same body is not decoded again. */
  private lastBad: { body: string; message: string } | undefined;

  constructor(private readonly deps: HttpSourceDeps) {}

  start({ signal, emit }: { signal: AbortSignal; emit: (pods: Pod[]) => void }): void {
    const tick = async () => {
      if (signal.aborted) return;
      const pods = await this.poll(signal);
      if (pods && !signal.aborted) emit(pods);
      if (!signal.aborted) this.deps.clock.setTimer(() => void tick(), this.deps.periodMs);
    };
    void tick();
  }

  private report(msg: string) {
    if (msg !== this.lastError) this.deps.logger.error({ url: this.deps.url }, msg);
    this.lastError = msg;
  }

  /** One GET; the pods when the body changed and decoded, undefined when nothing is to be sent. */
  async poll(signal?: AbortSignal): Promise<Pod[] | undefined> {
    let body: string;
    try {
      const res = await getText(this.deps.url, {
        headers: this.deps.headers,
        timeoutMs: 10_000,
        maxBytes: MAX_MANIFEST_BYTES,
        signal,
      });
      if (res.status < 200 || res.status > 299) {
        this.report(`manifest URL answered ${res.status}`);
        return undefined;
      }
      if (res.body === undefined) {
        this.report(`invalid manifest from URL: the body is larger than ${MAX_MANIFEST_BYTES} bytes`);
        return undefined;
      }
      body = res.body;
    } catch (err) {
      this.report(`unable to read manifest URL: ${messageOf(err)}`);
      return undefined;
    }
    if (body === this.lastBody) return undefined;
    if (body === this.lastBad?.body) {
      this.report(this.lastBad.message);
      return undefined;
    }
    const decoded = await (this.deps.decode ?? decodeManifestsOffThread)(body, this.deps.url, { signal });
    if (signal?.aborted) return undefined;
    const r = namedStaticPods(
      decoded,
      (p) => toStaticPod(p, { nodeName: this.deps.nodeName, kind: 'http', location: this.deps.url }),
      this.deps.url,
    );
    // As upstream: a response with any invalid pod is rejected whole; the last good set stays.
    if (r.errors.length) {
      this.lastBad = { body, message: `invalid manifest from URL: ${r.errors.join('; ')}` };
      this.report(this.lastBad.message);
      return undefined;
    }
    this.lastError = undefined;
    this.lastBad = undefined;
    this.lastBody = body;
    return r.pods;
  }
}
