/**
 * The key pair of a pod certificate and its proof of possession, as upstream's generateKeyAndProof: a new key of the
 * projection's `keyType`, its public half in PKIX (DER), its private half as a PKCS#8 PRIVATE KEY block, and the pod's
 * UID signed with it — RSA-PSS over SHA-256 (salt as long as it can be, Go's PSSSaltLengthAuto), ECDSA over SHA-256 in
 * ASN.1, or pure Ed25519 — which the apiserver checks against the public key.
 */
import { constants, generateKeyPair, sign, type KeyObject } from 'node:crypto';
import { promisify } from 'node:util';

/** What a PodCertificateRequest carries of the key, and the key the pod gets. */
export interface PodCertificateKey {
  /** PKCS#8 PEM. */
  privateKeyPem: string;
  /** The public key, PKIX DER. */
  pkixPublicKey: Buffer;
  /** The pod's UID signed with the key. */
  proofOfPossession: Buffer;
}

const generate = promisify(generateKeyPair) as (
  type: string,
  options: object,
) => Promise<{ privateKey: KeyObject; publicKey: KeyObject }>;

/** Key types a projection may ask for, with how to make and sign with each. */
const KEY_TYPES: Record<
  string,
  {
    make: () => Promise<{ privateKey: KeyObject; publicKey: KeyObject }>;
    sign: (data: Buffer, key: KeyObject) => Buffer;
  }
> = {
  RSA3072: { make: () => generate('rsa', { modulusLength: 3072 }), sign: signPss },
  RSA4096: { make: () => generate('rsa', { modulusLength: 4096 }), sign: signPss },
  ECDSAP256: { make: () => generate('ec', { namedCurve: 'P-256' }), sign: signEcdsa },
  ECDSAP384: { make: () => generate('ec', { namedCurve: 'P-384' }), sign: signEcdsa },
  ECDSAP521: { make: () => generate('ec', { namedCurve: 'P-521' }), sign: signEcdsa },
  ED25519: { make: () => generate('ed25519', {}), sign: (data, key) => sign(null, data, key) },
};

function signPss(data: Buffer, key: KeyObject): Buffer {
  return sign('sha256', data, {
    key,
    padding: constants.RSA_PKCS1_PSS_PADDING,
    saltLength: constants.RSA_PSS_SALTLEN_MAX_SIGN,
  });
}

function signEcdsa(data: Buffer, key: KeyObject): Buffer {
  return sign('sha256', data, { key, dsaEncoding: 'der' });
}

/** A new key of `keyType` with the proof for `podUid`; upstream's error for a type it does not know. */
export async function podCertificateKey(keyType: string, podUid: string): Promise<PodCertificateKey> {
  const kind = KEY_TYPES[keyType];
  if (!kind) throw new Error(`while generating keypair: unknown key type ${JSON.stringify(keyType)}`);
  const { privateKey, publicKey } = await kind.make();
  return {
    privateKeyPem: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
    pkixPublicKey: publicKey.export({ type: 'spki', format: 'der' }),
    proofOfPossession: kind.sign(Buffer.from(podUid, 'utf8'), privateKey),
  };
}
