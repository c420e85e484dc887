/**
 * Wiring of the pod sources: the static manifest directory, the manifest URL and, with an
 * apiserver client, the apiserver watch of this node's pods. PodConfig merges them into one stream.
 */
import type { Clock } from '../lib/clock.js';
import type { Logger } from '../lib/logger.js';
import type { KubeClient } from '../lib/kube-client.js';
import { FileSource } from './podconfig/file.js';
import { HttpSource } from './podconfig/http.js';
import { ApiserverSource } from './podconfig/apiserver.js';
import type { PodSource } from './podconfig/types.js';
import type { Pod } from '../api/types.js';
import type { AgentConfig } from './agent-config.js';

/** The sources the configuration asks for. */
export function composeSources(
  cfg: AgentConfig,
  o: { api?: KubeClient; logger: Logger; clock: Clock; onWatch?: (pods: Pod[]) => void },
): PodSource[] {
  const { logger, clock } = o;
  const sources: PodSource[] = [];
  // Upstream's makePodSourceConfig logs each source it adds, in this order (a URL without its headers, which may
  // carry credentials).
  if (cfg.staticPodPath) {
    logger.info({ path: cfg.staticPodPath }, 'Adding static pod path');
    sources.push(
      new FileSource({
        path: cfg.staticPodPath,
        nodeName: cfg.nodeName,
        periodMs: cfg.fileCheckFrequencyMs,
        logger,
        clock,
      }),
    );
  }
  if (cfg.staticPodURL) {
    logger.info({ URL: cfg.staticPodURL }, 'Adding pod URL with HTTP header');
    sources.push(
      new HttpSource({
        url: cfg.staticPodURL,
        headers: cfg.staticPodURLHeader,
        nodeName: cfg.nodeName,
        periodMs: cfg.httpCheckFrequencyMs,
        logger,
        clock,
      }),
    );
  }
  if (o.api) {
    logger.info('Adding apiserver pod source');
    sources.push(
      new ApiserverSource({
        client: o.api,
        nodeName: cfg.nodeName,
        clock,
        logger,
        watchdogMs: cfg.watchdogMs,
        onWatch: o.onWatch,
      }),
    );
  }
  return sources;
}
