/**
 * The registration's journal lines as upstream's registerWithAPIServer writes them: "Attempting to register node"
 * before each try, "Successfully registered node" once it is done — for a new Node and for one already there; and the
 * lines an operator looks for while the apiserver refuses the node, the registration's and the lease controller's.
 */
import { describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { createLogger } from '../../../src/lib/logger.js';
import { until } from '../../e2e/helpers.js';
import { useFakeApiserver } from '../../fixtures/apiserver/suite.js';
import { startRegistering } from './node-fixture.js';
import { LeaseController } from '../../../src/agent/nodestatus/lease.js';
import { createKubeClient } from '../../../src/lib/kube-client.js';
import { realClock } from '../../../src/lib/clock.js';

const fake = useFakeApiserver();

/** A klog text logger and what it wrote. */
function capturingLogger() {
  let out = '';
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      out += chunk.toString();
      done();
    },
  });
  return { logger: createLogger({ destination, format: 'text' }), output: () => out };
}

describe('registration log lines', () => {
  for (const existing of [false, true]) {
    it(`${existing ? 'a Node already there' : 'a new Node'}: attempting, then registered`, async () => {
      const name = existing ? 'reg-existing' : 'reg-new';
      if (existing) fake.api.store.create('nodes', { metadata: { name } });
      const { logger, output } = capturingLogger();
      const stop = await startRegistering(fake.kubeconfigFor(`system:node:${name}`), name, { logger });
      try {
        await until(() => output().includes('"Successfully registered node"'), 5000, 'registered');
      } finally {
        stop();
      }
      const lines = output().split('\n');
      const attempt = lines.findIndex((l) => l.includes(`"Attempting to register node" node="${name}"`));
      const done = lines.findIndex((l) => l.includes(`"Successfully registered node" node="${name}"`));
      expect(attempt).toBeGreaterThanOrEqual(0);
      expect(done).toBeGreaterThan(attempt);
    });
  }
});

describe('failure log lines, as upstream writes them while the apiserver refuses', () => {
  it('"Unable to register node with API server" at error level, with the error and the node', async () => {
    const name = 'reg-refused';
    fake.api.inject(({ method, path }) =>
      method === 'POST' && path === '/api/v1/nodes' ? { code: 503, reason: 'ServiceUnavailable' } : undefined,
    );
    const { logger, output } = capturingLogger();
    const stop = await startRegistering(fake.kubeconfigFor(`system:node:${name}`), name, { logger });
    try {
      await until(() => output().includes('"Unable to register node with API server"'), 5000, 'refused');
    } finally {
      stop();
      fake.api.inject(undefined);
    }
    expect(output()).toMatch(/^E\d{4} .*\] "Unable to register node with API server" err=".*" node="reg-refused"$/m);
  });

  it('"Failed to ensure lease exists, will retry" with its interval, then "Failed to update lease"', async () => {
    const name = 'lease-refused';
    let refuse: 'GET' | 'PUT' = 'GET';
    fake.api.inject(({ method, path }) =>
      path.startsWith('/apis/coordination.k8s.io/') && method === refuse
        ? { code: 503, reason: 'ServiceUnavailable' }
        : undefined,
    );
    const { logger, output } = capturingLogger();
    const stop = new AbortController();
    const lease = new LeaseController({
      client: await createKubeClient(fake.kubeconfigFor(`system:node:${name}`), { timeoutMs: 3000 }),
      nodeName: name,
      durationSeconds: 2,
      nodeUid: () => undefined,
      clock: realClock,
      logger,
    });
    lease.start({ signal: stop.signal });
    try {
      await until(() => output().includes('"Failed to ensure lease exists, will retry"'), 5000, 'ensure refused');
      expect(output()).toMatch(/"Failed to ensure lease exists, will retry" err=".*" interval="\d+(ms|s)"/);
      refuse = 'PUT';
      await until(() => output().includes('"Failed to update lease"'), 10_000, 'update refused');
    } finally {
      stop.abort();
      fake.api.inject(undefined);
    }
  });
});
