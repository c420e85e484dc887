/**
 * The registration's journal lines as upstream's registerWithAPIServer writes them: "Attempting to register node"
 * before each try, "Successfully registered node" once it is done — for a new Node and for one already there.
 */
import { describe, expect, it } from 'vitest';
import { Writable } from 'node:stream';
import { createLogger } from '../../../src/lib/logger.js';
import { until } from '../../e2e/helpers.js';
import { useFakeApiserver } from '../../fixtures/apiserver/suite.js';
import { startRegistering } from './node-fixture.js';

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
