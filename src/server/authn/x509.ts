/**
 * x509 client-certificate authentication: the TLS layer verifies the chain against the client
 * CA (requested, not required); a verified certificate → user = CN, groups = O.
 */
import type { TLSSocket } from 'node:tls';
import type { Authenticator, UserInfo } from './authenticator.js';

/** The x509 authenticator. */
export const x509Authenticator: Authenticator = {
  async authenticate(req): Promise<UserInfo | null> {
    const sock = req.raw.socket as TLSSocket;
    if (!sock.encrypted || !sock.authorized) return null;
    const cert = sock.getPeerCertificate();
    const cn = cert?.subject?.CN;
    if (!cn) return null;
    const o = cert.subject.O;
    return { name: Array.isArray(cn) ? cn[0] : cn, groups: o ? (Array.isArray(o) ? o : [o]) : [] };
  },
};
