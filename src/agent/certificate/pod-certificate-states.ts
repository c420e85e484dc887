/**
 * The life of one projected `podCertificate` source's credentials, as upstream's IssuingManager keeps it
 * (pkg/kubelet/podcertificate), as a pure step: given the state, the PodCertificateRequest it waits for (as the
 * watch has it) and the time, what the state becomes, what the volume gets, and what is to be done.
 *
 *                         ┌─────────────────┐
 *                         ▼                 │
 *   initial ──► wait ──► fresh ──────► waitRefresh
 *                 │                         │
 *                 ├──────► denied ◄─────────┤
 *                 └──────► failed ◄─────────┘
 *
 * A request not seen within 10 minutes (and up to 5 more) of its creation is taken as deleted and made again. Once
 * issued, the credentials are refreshed from the request's `beginRefreshAt` (plus up to 5 minutes, so that the pods
 * of one node do not all ask at once), the old ones served until the new ones are issued; a denial or failure of the
 * refresh takes them away, as upstream's. Pure.
 */

/** A PodCertificateRequest as the kubelet reads it. */
export interface PodCertificateRequest {
  metadata: { name: string; namespace?: string; creationTimestamp?: string; resourceVersion?: string };
  spec?: { podUID?: string; nodeName?: string; signerName?: string };
  status?: {
    conditions?: { type: string; status?: string; reason?: string; message?: string }[];
    certificateChain?: string;
    beginRefreshAt?: string;
    notAfter?: string;
  };
}

/** The credentials a projection has. */
interface Issued {
  privateKeyPem: string;
  certificateChain: string;
  beginRefreshAtMs: number;
  notAfterMs: number;
  overdueReported: boolean;
  expiredReported: boolean;
}

export type CredentialState =
  | { kind: 'initial' }
  | { kind: 'wait'; privateKeyPem: string; requestName: string; abandonAtMs: number }
  | { kind: 'denied' | 'failed'; reason: string; message: string }
  | ({ kind: 'fresh' } & Issued)
  | ({ kind: 'waitRefresh'; refreshKeyPem: string; refreshRequestName: string; refreshAbandonAtMs: number } & Issued);

/** What one step decides. */
export interface Step {
  state: CredentialState;
  /** The credentials the volume writes, when it has some. */
  credentials?: { privateKeyPem: string; certificateChain: string };
  /** Why the volume has none (its FailedMount message). */
  error?: string;
  /** A request to make: the first one, or a refresh. */
  create?: 'initial' | 'refresh';
  /** Warning events on the pod: [reason, message]. */
  events: [string, string][];
}

/** After this long past a request's creation, one not seen is taken as deleted. */
export const ASSUME_DELETED_MS = 10 * 60_000;
/** After this long past `beginRefreshAt`, a refresh is overdue. */
export const REFRESH_OVERDUE_MS = 10 * 60_000;
/** The most jitter added to `beginRefreshAt` and to ASSUME_DELETED_MS. */
export const JITTER_MS = 5 * 60_000;

const NOT_ISSUED = 'credential bundle is not issued yet';
/** Go's %q for the texts a condition carries. */
const quoted = (s: string) => JSON.stringify(s);

/** The certificate blocks of a chain, without headers or text between them, as upstream's cleanCertificateChain. */
export type CleanChain = (chain: string) => string;

/** What a terminal request makes of the state; undefined while it is pending. */
function concluded(
  request: PodCertificateRequest,
  privateKeyPem: string,
  jitterMs: number,
  clean: CleanChain,
): { state: CredentialState; events: [string, string][] } | undefined {
  const name = `${request.metadata.namespace ?? ''}/${request.metadata.name}`;
  for (const condition of request.status?.conditions ?? []) {
    const reason = condition.reason ?? '';
    const message = condition.message ?? '';
    if (condition.type === 'Denied' || condition.type === 'Failed') {
      const verb = condition.type === 'Denied' ? 'was denied' : 'failed';
      return {
        state: { kind: condition.type === 'Denied' ? 'denied' : 'failed', reason, message },
        events: [
          [
            condition.type,
            `PodCertificateRequest ${name} ${verb}, reason=${quoted(reason)}, message=${quoted(message)}`,
          ],
        ],
      };
    }
    if (condition.type === 'Issued') {
      const status = request.status!;
      return {
        state: {
          kind: 'fresh',
          privateKeyPem,
          certificateChain: clean(status.certificateChain ?? ''),
          beginRefreshAtMs: Date.parse(status.beginRefreshAt ?? '') + jitterMs,
          notAfterMs: Date.parse(status.notAfter ?? ''),
          overdueReported: false,
          expiredReported: false,
        },
        events: [],
      };
    }
  }
  return undefined;
}

/** The overdue and expired warnings an issued credential is due, each once. */
function lateness(issued: Issued, nowMs: number): { issued: Issued; events: [string, string][] } {
  const events: [string, string][] = [];
  let { overdueReported, expiredReported } = issued;
  if (nowMs > issued.beginRefreshAtMs + REFRESH_OVERDUE_MS && !overdueReported) {
    events.push(['CertificateOverdueForRefresh', 'PodCertificate refresh overdue']);
    overdueReported = true;
  }
  if (nowMs > issued.notAfterMs && !expiredReported) {
    events.push(['CertificateExpired', 'PodCertificate expired']);
    expiredReported = true;
  }
  return { issued: { ...issued, overdueReported, expiredReported }, events };
}

const served = (issued: Issued) => ({
  privateKeyPem: issued.privateKeyPem,
  certificateChain: issued.certificateChain,
});

function issuedOf(state: Issued): Issued {
  const { privateKeyPem, certificateChain, beginRefreshAtMs, notAfterMs, overdueReported, expiredReported } = state;
  return { privateKeyPem, certificateChain, beginRefreshAtMs, notAfterMs, overdueReported, expiredReported };
}

/** One step of a projection's credentials. `request(name)`: the request of that name in the projection's namespace. */
export function stepCredentials(
  state: CredentialState,
  request: (name: string) => PodCertificateRequest | undefined,
  nowMs: number,
  jitterMs: number,
  clean: CleanChain,
): Step {
  switch (state.kind) {
    case 'initial':
      return { state, error: NOT_ISSUED, create: 'initial', events: [] };
    case 'wait': {
      const current = request(state.requestName);
      if (!current)
        return nowMs > state.abandonAtMs
          ? { state: { kind: 'initial' }, error: NOT_ISSUED, create: 'initial', events: [] }
          : { state, error: NOT_ISSUED, events: [] };
      const next = concluded(current, state.privateKeyPem, jitterMs, clean);
      if (!next) return { state, error: NOT_ISSUED, events: [] };
      return { ...next, ...outcome(next.state) };
    }
    case 'denied':
    case 'failed':
      return { state, error: outcome(state).error, events: [] };
    case 'fresh': {
      if (nowMs < state.beginRefreshAtMs) return { state, credentials: served(state), events: [] };
      const { issued, events } = lateness(issuedOf(state), nowMs);
      return { state: { kind: 'fresh', ...issued }, credentials: served(issued), create: 'refresh', events };
    }
    case 'waitRefresh': {
      const current = request(state.refreshRequestName);
      const issued = issuedOf(state);
      if (!current) {
        if (nowMs > state.refreshAbandonAtMs)
          return { state: { kind: 'fresh', ...issued }, credentials: served(issued), create: 'refresh', events: [] };
        return { state, credentials: served(issued), events: [] };
      }
      const next = concluded(current, state.refreshKeyPem, jitterMs, clean);
      if (next) return { ...next, ...outcome(next.state) };
      const late = lateness(issued, nowMs);
      return { state: { ...state, ...late.issued }, credentials: served(late.issued), events: late.events };
    }
  }
}

/** What the volume gets in `state`: credentials, or the error upstream's getCredBundle gives. */
function outcome(state: CredentialState): Pick<Step, 'credentials' | 'error'> {
  switch (state.kind) {
    case 'fresh':
    case 'waitRefresh':
      return { credentials: served(state) };
    case 'denied':
    case 'failed': {
      const why = `reason=${quoted(state.reason)} message=${quoted(state.message)}`;
      return { error: `PodCertificateRequest was permanently ${state.kind}: ${why}` };
    }
    case 'initial':
    case 'wait':
      return { error: NOT_ISSUED };
  }
}

/** The state `kubelet_podcertificate_states` counts a source in (upstream's metricsState). Pure. */
export function metricsState(state: CredentialState, nowMs: number): string {
  switch (state.kind) {
    case 'initial':
    case 'wait':
      return 'not_yet_issued';
    case 'denied':
    case 'failed':
      return state.kind;
    case 'fresh':
    case 'waitRefresh':
      if (nowMs > state.notAfterMs) return 'expired';
      return nowMs > state.beginRefreshAtMs + REFRESH_OVERDUE_MS ? 'overdue_for_refresh' : 'fresh';
  }
}
