/**
 * x509 client-certificate authentication: TLS requests a client certificate but does not
 * require one; a certificate that verifies against the client CA and allows client auth → user =
 * CN, groups = O. No certificate → no opinion; an unverified one → rejected.
 */
import type { TLSSocket } from 'node:tls';
import { AuthenticationError, type Authenticator, type UserInfo } from './authenticator.js';

const clientAuthOid = '1.3.6.1.5.5.7.3.2';
const list = (v: string | string[] | undefined) => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/** The x509 authenticator. */
export const x509Authenticator: Authenticator = {
  async authenticate(req): Promise<UserInfo | null> {
    const sock = req.socket as TLSSocket;
    if (!sock.encrypted) return null;
    const cert = sock.getPeerCertificate();
    if (!cert || Object.keys(cert).length === 0) return null;
    if (!sock.authorized)
      throw new AuthenticationError(`x509: certificate rejected: ${String(sock.authorizationError)}`);
    if (cert.ext_key_usage && !cert.ext_key_usage.includes(clientAuthOid))
      throw new AuthenticationError('x509: certificate specifies an incompatible key usage');
    const [cn] = list(cert.subject?.CN);
    if (!cn) throw new AuthenticationError('x509: certificate has no common name');
    return { name: cn, groups: list(cert.subject.O) };
  },
};
