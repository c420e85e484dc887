/**
 * TLS for the secure port: options from the config's Go names (tlsMinVersion, tlsCipherSuites, tlsCurvePreferences),
 * client certificates requested but not required, and reloading of the serving certificate /
 * key and the client CA when their files change on disk (no restart; new connections use them).
 */
import { readFile } from 'node:fs/promises';
import { unwatchFile, watchFile } from 'node:fs';
import type { Server } from 'node:https';
import type { SecureContextOptions } from 'node:tls';
import { messageOf } from '../lib/errors.js';
import type { Logger } from '../lib/logger.js';
import { goTlsVersions, opensslCiphers, opensslGroups } from '../lib/tls-names.js';
import { opensslHasGroup } from '../lib/openssl-groups.js';

/** Where the TLS material lives and how to use it. */
export interface TlsFiles {
  certFile: string;
  keyFile: string;
  clientCAFile?: string;
  minVersion?: string;
  cipherSuites?: string[];
  /** tlsCurvePreferences: the key exchange groups offered, in order (absent or empty: OpenSSL's defaults). */
  curvePreferences?: (number | string)[];
}

/** The https options for `files` (reads them now). Throws on unreadable files or unknown names. */
export async function tlsOptions(
  files: TlsFiles,
): Promise<SecureContextOptions & { requestCert: true; rejectUnauthorized: false }> {
  const [cert, key, ca] = await Promise.all([
    readFile(files.certFile),
    readFile(files.keyFile),
    files.clientCAFile ? readFile(files.clientCAFile) : undefined,
  ]);
  return {
    cert,
    key,
    ...(ca ? { ca } : {}),
    requestCert: true,
    rejectUnauthorized: false,
    minVersion: files.minVersion ? goTlsVersions[files.minVersion] : 'TLSv1.2',
    ...(files.cipherSuites?.length ? { ciphers: opensslCiphers(files.cipherSuites) } : {}),
    ...(files.curvePreferences?.length
      ? { ecdhCurve: opensslGroups(files.curvePreferences, opensslHasGroup).groups.join(':') }
      : {}),
  };
}

/**
 * Polls the files every `intervalMs`; on a change, rebuilds the context and installs it on
 * `server`. A broken new pair is logged and the old context stays. Returns a stop function.
 */
export function reloadTlsOnChange(
  server: Server,
  files: TlsFiles,
  opts: { logger: Logger; intervalMs?: number },
): () => void {
  const paths = [files.certFile, files.keyFile, ...(files.clientCAFile ? [files.clientCAFile] : [])];
  let pending: NodeJS.Timeout | undefined;
  const reload = () => {
    clearTimeout(pending);
    // Let a writer finish replacing both files before reading them.
    pending = setTimeout(() => {
      // A half-written or unusable file set must never escape as a rejection: keep the old context.
      tlsOptions(files)
        .then((o) => {
          server.setSecureContext(o);
          opts.logger.info({ files: paths }, 'reloaded TLS certificate, key and client CA');
        })
        .catch((err: unknown) =>
          opts.logger.error({ err: messageOf(err) }, 'TLS files changed but cannot be used; keeping the previous ones'),
        );
    }, 100);
  };
  for (const p of paths)
    watchFile(p, { interval: opts.intervalMs ?? 2000, persistent: false }, (cur, prev) => {
      if (cur.mtimeMs !== prev.mtimeMs || cur.ino !== prev.ino || cur.size !== prev.size) reload();
    });
  return () => {
    clearTimeout(pending);
    for (const p of paths) unwatchFile(p);
  };
}
