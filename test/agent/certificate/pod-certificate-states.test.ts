/** A podCertificate source's credentials through their states, as upstream's IssuingManager moves them. */
import { createPublicKey, verify, constants, X509Certificate } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { podCertificateKey } from '../../../src/agent/certificate/pod-certificate-keys.js';
import {
  ASSUME_DELETED_MS,
  REFRESH_OVERDUE_MS,
  metricsState,
  stepCredentials,
  type CredentialState,
  type PodCertificateRequest,
} from '../../../src/agent/certificate/pod-certificate-states.js';
import { cleanCertificateChain } from '../../../src/agent/certificate/pod-certificates.js';
import { createCertificate, newKeyPem } from '../../../src/lib/x509.js';

const T = Date.parse('2026-11-30T12:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');
const clean = (chain: string) => `clean(${chain})`;

function request(name: string, condition?: { type: string; reason?: string; message?: string }): PodCertificateRequest {
  return {
    metadata: { name, namespace: 'ns' },
    status: condition
      ? {
          conditions: [{ status: 'True', ...condition }],
          certificateChain: `chain-of-${name}`,
          beginRefreshAt: iso(T + 3_600_000),
          notAfter: iso(T + 7_200_000),
        }
      : {},
  };
}
const only = (r: PodCertificateRequest) => (name: string) => (name === r.metadata.name ? r : undefined);
const none = () => undefined;

describe('stepCredentials', () => {
  it('asks for a first request, then waits for it while pending or not yet seen', () => {
    expect(stepCredentials({ kind: 'initial' }, none, T, 0, clean)).toEqual({
      state: { kind: 'initial' },
      error: 'credential bundle is not issued yet',
      create: 'initial',
      events: [],
    });
    const wait: CredentialState = { kind: 'wait', privateKeyPem: 'K1', requestName: 'req-1', abandonAtMs: T + 60_000 };
    expect(stepCredentials(wait, none, T, 0, clean)).toMatchObject({
      state: wait,
      error: 'credential bundle is not issued yet',
    });
    expect(stepCredentials(wait, only(request('req-1')), T, 0, clean).create).toBeUndefined();
    // Not seen past its abandon time: taken as deleted, asked for again.
    expect(stepCredentials(wait, none, T + 61_000, 0, clean)).toMatchObject({
      state: { kind: 'initial' },
      create: 'initial',
    });
  });

  it('an issued request gives the key and the cleaned chain, refreshed from beginRefreshAt plus the jitter', () => {
    const wait: CredentialState = { kind: 'wait', privateKeyPem: 'K1', requestName: 'req-1', abandonAtMs: T };
    const step = stepCredentials(wait, only(request('req-1', { type: 'Issued' })), T, 1000, clean);
    expect(step.credentials).toEqual({ privateKeyPem: 'K1', certificateChain: 'clean(chain-of-req-1)' });
    expect(step.state).toMatchObject({
      kind: 'fresh',
      beginRefreshAtMs: T + 3_600_000 + 1000,
      notAfterMs: T + 7_200_000,
    });
    expect(step.error).toBeUndefined();
  });

  it("a denial or a failure is final, with upstream's error and a Warning event", () => {
    const wait: CredentialState = { kind: 'wait', privateKeyPem: 'K1', requestName: 'req-1', abandonAtMs: T };
    const denied = stepCredentials(
      wait,
      only(request('req-1', { type: 'Denied', reason: 'Nope', message: 'not "you"' })),
      T,
      0,
      clean,
    );
    expect(denied.error).toBe('PodCertificateRequest was permanently denied: reason="Nope" message="not \\"you\\""');
    expect(denied.events).toEqual([
      ['Denied', 'PodCertificateRequest ns/req-1 was denied, reason="Nope", message="not \\"you\\""'],
    ]);
    expect(stepCredentials(denied.state, none, T + 1e9, 0, clean)).toMatchObject({ error: denied.error, events: [] });
    const failed = stepCredentials(wait, only(request('req-1', { type: 'Failed', reason: 'Boom' })), T, 0, clean);
    expect(failed.error).toBe('PodCertificateRequest was permanently failed: reason="Boom" message=""');
    expect(failed.events[0][0]).toBe('Failed');
  });

  it('refreshes from beginRefreshAt, serving the old credentials until the new ones are issued; late ones warn once', () => {
    const fresh: CredentialState = {
      kind: 'fresh',
      privateKeyPem: 'K1',
      certificateChain: 'C1',
      beginRefreshAtMs: T,
      notAfterMs: T + 5 * 60_000,
      overdueReported: false,
      expiredReported: false,
    };
    expect(stepCredentials(fresh, none, T - 1, 0, clean)).toEqual({
      state: fresh,
      credentials: { privateKeyPem: 'K1', certificateChain: 'C1' },
      events: [],
    });
    const due = stepCredentials(fresh, none, T + 1, 0, clean);
    expect(due).toMatchObject({ create: 'refresh', credentials: { privateKeyPem: 'K1' }, events: [] });
    const waiting: CredentialState = {
      ...fresh,
      kind: 'waitRefresh',
      refreshKeyPem: 'K2',
      refreshRequestName: 'req-2',
      refreshAbandonAtMs: T + ASSUME_DELETED_MS,
    };
    // Pending past beginRefreshAt + 10 min and past notAfter: both warnings, once.
    const late = stepCredentials(waiting, only(request('req-2')), T + REFRESH_OVERDUE_MS + 1, 0, clean);
    expect(late.credentials).toEqual({ privateKeyPem: 'K1', certificateChain: 'C1' });
    expect(late.events).toEqual([
      ['CertificateOverdueForRefresh', 'PodCertificate refresh overdue'],
      ['CertificateExpired', 'PodCertificate expired'],
    ]);
    expect(stepCredentials(late.state, only(request('req-2')), T + REFRESH_OVERDUE_MS + 2, 0, clean).events).toEqual(
      [],
    );
    const renewed = stepCredentials(late.state, only(request('req-2', { type: 'Issued' })), T, 0, clean);
    expect(renewed.credentials).toEqual({ privateKeyPem: 'K2', certificateChain: 'clean(chain-of-req-2)' });
    expect(renewed.state.kind).toBe('fresh');
    // A refresh request not seen past its abandon time: asked for again, the old credentials still served.
    expect(stepCredentials(waiting, none, T + ASSUME_DELETED_MS + 1, 0, clean)).toMatchObject({
      state: { kind: 'fresh' },
      create: 'refresh',
      credentials: { privateKeyPem: 'K1' },
    });
    // A denied refresh takes the credentials away, as upstream's.
    expect(
      stepCredentials(waiting, only(request('req-2', { type: 'Denied' })), T, 0, clean).credentials,
    ).toBeUndefined();
  });
});

describe('metricsState', () => {
  it("names each state as upstream's kubelet_podcertificate_states does", () => {
    const issued = {
      privateKeyPem: 'K',
      certificateChain: 'C',
      beginRefreshAtMs: T,
      notAfterMs: T + 3_600_000,
      overdueReported: false,
      expiredReported: false,
    };
    expect(metricsState({ kind: 'initial' }, T)).toBe('not_yet_issued');
    expect(metricsState({ kind: 'wait', privateKeyPem: 'K', requestName: 'r', abandonAtMs: T }, T)).toBe(
      'not_yet_issued',
    );
    expect(metricsState({ kind: 'denied', reason: '', message: '' }, T)).toBe('denied');
    expect(metricsState({ kind: 'failed', reason: '', message: '' }, T)).toBe('failed');
    expect(metricsState({ kind: 'fresh', ...issued }, T + REFRESH_OVERDUE_MS)).toBe('fresh');
    expect(metricsState({ kind: 'fresh', ...issued }, T + REFRESH_OVERDUE_MS + 1)).toBe('overdue_for_refresh');
    expect(metricsState({ kind: 'fresh', ...issued }, T + 3_600_001)).toBe('expired');
  });
});

describe('podCertificateKey', () => {
  it.each(['RSA3072', 'ECDSAP256', 'ECDSAP384', 'ECDSAP521', 'ED25519'])(
    '%s: a PKCS#8 key whose PKIX public half verifies the proof over the pod UID, as the apiserver checks it',
    async (keyType) => {
      const key = await podCertificateKey(keyType, 'pod-uid-1');
      expect(key.privateKeyPem).toMatch(/^-----BEGIN PRIVATE KEY-----\n/);
      const publicKey = createPublicKey({ key: key.pkixPublicKey, format: 'der', type: 'spki' });
      const data = Buffer.from('pod-uid-1');
      const ok =
        keyType === 'ED25519'
          ? verify(null, data, publicKey, key.proofOfPossession)
          : keyType.startsWith('RSA')
            ? verify(
                'sha256',
                data,
                {
                  key: publicKey,
                  padding: constants.RSA_PKCS1_PSS_PADDING,
                  saltLength: constants.RSA_PSS_SALTLEN_AUTO,
                },
                key.proofOfPossession,
              )
            : verify('sha256', data, publicKey, key.proofOfPossession);
      expect(ok).toBe(true);
      expect(
        verify(keyType === 'ED25519' ? null : 'sha256', Buffer.from('other'), publicKey, key.proofOfPossession),
      ).toBe(false);
    },
    30_000,
  );

  it("refuses a key type upstream does not know, with upstream's words", async () => {
    await expect(podCertificateKey('DSA1024', 'u')).rejects.toThrow(
      'while generating keypair: unknown key type "DSA1024"',
    );
  });
});

describe('cleanCertificateChain', () => {
  it('keeps the certificate blocks only, without headers or text between them', async () => {
    const now = Date.now();
    const cert = await createCertificate({
      subject: { cn: 'leaf' },
      key: { privateKeyPem: await newKeyPem() },
      usage: 'ca',
      notBefore: new Date(now - 60_000),
      notAfter: new Date(now + 60_000),
    });
    const messy = `intro\n${cert.replace('-----BEGIN CERTIFICATE-----\n', '-----BEGIN CERTIFICATE-----\nNote: x\n\n')}between\n${cert}`;
    const cleaned = cleanCertificateChain(messy);
    expect(cleaned).toBe(cert + cert);
    expect(new X509Certificate(cleaned).subject).toBe('CN=leaf');
  });
});
