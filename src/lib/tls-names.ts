/**
 * TLS settings by their Go names (k8s.io/component-base/cli/flag ciphers.go, crypto/tls
 * versions) mapped to Node/OpenSSL names. Go accepts TLS 1.3 suite names but does not let them be
 * configured; Node behaves the same way (listing them is harmless, leaving them out keeps the
 * defaults).
 */

/** Go cipher suite name → OpenSSL name. */
export const goCipherSuites: Readonly<Record<string, string>> = {
  TLS_RSA_WITH_RC4_128_SHA: 'RC4-SHA',
  TLS_RSA_WITH_3DES_EDE_CBC_SHA: 'DES-CBC3-SHA',
  TLS_RSA_WITH_AES_128_CBC_SHA: 'AES128-SHA',
  TLS_RSA_WITH_AES_256_CBC_SHA: 'AES256-SHA',
  TLS_RSA_WITH_AES_128_CBC_SHA256: 'AES128-SHA256',
  TLS_RSA_WITH_AES_128_GCM_SHA256: 'AES128-GCM-SHA256',
  TLS_RSA_WITH_AES_256_GCM_SHA384: 'AES256-GCM-SHA384',
  TLS_ECDHE_ECDSA_WITH_RC4_128_SHA: 'ECDHE-ECDSA-RC4-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: 'ECDHE-ECDSA-AES128-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: 'ECDHE-ECDSA-AES256-SHA',
  TLS_ECDHE_RSA_WITH_RC4_128_SHA: 'ECDHE-RSA-RC4-SHA',
  TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA: 'ECDHE-RSA-DES-CBC3-SHA',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: 'ECDHE-RSA-AES128-SHA',
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: 'ECDHE-RSA-AES256-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256: 'ECDHE-ECDSA-AES128-SHA256',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256: 'ECDHE-RSA-AES128-SHA256',
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: 'ECDHE-RSA-AES128-GCM-SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: 'ECDHE-ECDSA-AES128-GCM-SHA256',
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: 'ECDHE-RSA-AES256-GCM-SHA384',
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: 'ECDHE-ECDSA-AES256-GCM-SHA384',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  TLS_AES_128_GCM_SHA256: 'TLS_AES_128_GCM_SHA256',
  TLS_AES_256_GCM_SHA384: 'TLS_AES_256_GCM_SHA384',
  TLS_CHACHA20_POLY1305_SHA256: 'TLS_CHACHA20_POLY1305_SHA256',
};

/** Go TLS version name → Node `minVersion`. */
export const goTlsVersions: Readonly<Record<string, 'TLSv1' | 'TLSv1.1' | 'TLSv1.2' | 'TLSv1.3'>> = {
  VersionTLS10: 'TLSv1',
  VersionTLS11: 'TLSv1.1',
  VersionTLS12: 'TLSv1.2',
  VersionTLS13: 'TLSv1.3',
};

/** The OpenSSL cipher list for Go names; throws naming the first unknown one. */
export function opensslCiphers(names: readonly string[]): string {
  return names
    .map((n) => {
      const o = goCipherSuites[n];
      if (!o)
        throw new Error(`unknown cipher suite "${n}" (want Go names such as TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256)`);
      return o;
    })
    .join(':');
}

/**
 * Go's tls.CurveID values (Kubernetes' `--tls-curve-preferences` format) and their IANA and Go names → the OpenSSL
 * group name Node's `ecdhCurve` takes.
 */
const goCurves: readonly { id: number; names: readonly string[]; openssl: string }[] = [
  { id: 23, names: ['secp256r1', 'CurveP256'], openssl: 'P-256' },
  { id: 24, names: ['secp384r1', 'CurveP384'], openssl: 'P-384' },
  { id: 25, names: ['secp521r1', 'CurveP521'], openssl: 'P-521' },
  { id: 29, names: ['X25519'], openssl: 'X25519' },
  { id: 4587, names: ['SecP256r1MLKEM768'], openssl: 'SecP256r1MLKEM768' },
  { id: 4588, names: ['X25519MLKEM768'], openssl: 'X25519MLKEM768' },
  { id: 4589, names: ['SecP384r1MLKEM1024'], openssl: 'SecP384r1MLKEM1024' },
];

/**
 * The OpenSSL groups for curve preferences (IDs or names), in their order; `unsupported` names those this OpenSSL
 * lacks (the post-quantum hybrids before OpenSSL 3.5), `supported(group)` saying which it has. Throws naming the
 * first value Go does not know.
 */
export function opensslGroups(
  preferences: readonly (number | string)[],
  supported: (group: string) => boolean,
): { groups: string[]; unsupported: string[] } {
  const groups: string[] = [];
  const unsupported: string[] = [];
  for (const preference of preferences) {
    const curve = goCurves.find((c) => c.id === preference || c.names.includes(String(preference)));
    if (!curve)
      throw new Error(
        `unknown curve ${JSON.stringify(preference)} (want Go's tls.CurveID values: ${goCurves.map((c) => c.id).join(', ')})`,
      );
    if (supported(curve.openssl)) groups.push(curve.openssl);
    else unsupported.push(curve.openssl);
  }
  return { groups, unsupported };
}
