import { describe, expect, it } from 'vitest';
import { initialState, nextState, probeTiming, type ProbeKind } from '../../../src/agent/prober/probe-state.js';

const run = (kind: ProbeKind, seq: string, o: { success?: number; failure?: number } = {}) => {
  let s = initialState(kind, 'c1');
  const out: string[] = [s.result];
  for (const ch of seq) {
    s = nextState(s, ch === 'S' ? 'success' : 'failure', {
      kind,
      successThreshold: o.success ?? 1,
      failureThreshold: o.failure ?? 3,
    });
    out.push(`${s.result}${s.onHold ? '!' : ''}`);
  }
  return out.join(' ');
};

describe('probe state machine (upstream worker.doProbe)', () => {
  it.each([
    ['readiness starts failed, one success flips it', 'readiness', 'S', {}, 'failure success'],
    [
      'readiness needs failureThreshold failures in a row',
      'readiness',
      'SFFSFFF',
      {},
      'failure success success success success success success failure',
    ],
    ['readiness successThreshold 2', 'readiness', 'SSFS', { success: 2 }, 'failure failure success success success'],
    [
      'liveness starts successful; 3 failures → failure and on hold',
      'liveness',
      'FFF',
      {},
      'success success success failure!',
    ],
    ['liveness failureThreshold 1', 'liveness', 'F', { failure: 1 }, 'success failure!'],
    ['startup starts unknown', 'startup', 'FS', {}, 'unknown unknown success'],
    ['startup fails after the threshold and holds', 'startup', 'FF', { failure: 2 }, 'unknown unknown failure!'],
  ])('%s', (_n, kind, seq, o, want) => expect(run(kind as ProbeKind, seq, o)).toBe(want));

  it('defaults as the API', () => {
    expect(probeTiming({}, 'readiness')).toEqual({
      initialDelaySeconds: 0,
      periodSeconds: 10,
      timeoutSeconds: 1,
      successThreshold: 1,
      failureThreshold: 3,
    });
    expect(probeTiming({ successThreshold: 3 }, 'liveness').successThreshold).toBe(1);
  });
});
