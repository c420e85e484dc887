/** klog's V(n) on the pino logger: a V(n) line is written only when --v is at least n, children included. */
import { describe, expect, it } from 'vitest';
import { createLogger, logV, setVerbosity, vEnabled } from '../../src/lib/logger.js';

function capture(verbosity: number) {
  const lines: string[] = [];
  const logger = createLogger({ verbosity, destination: { write: (s: string) => void lines.push(s) } });
  return { logger, lines };
}

describe('V(n) lines', () => {
  it('are written only when --v is at least n, above 4 too', () => {
    const { logger, lines } = capture(4);
    logV(logger, 4, {}, 'four');
    logV(logger, 5, {}, 'five');
    logV(logger, 10, {}, 'ten');
    expect(lines.map((l) => JSON.parse(l).msg)).toEqual(['four']);
    expect([vEnabled(logger, 0), vEnabled(logger, 4), vEnabled(logger, 5)]).toEqual([true, true, false]);
  });

  it('follow a change of --v, in child loggers too', () => {
    const { logger, lines } = capture(0);
    const child = logger.child({ component: 'remote_runtime' });
    logV(child, 10, {}, 'before');
    logV(child, 1, {}, 'one before');
    setVerbosity(logger, 10);
    logV(child, 10, {}, 'after');
    logV(child, 1, {}, 'one after');
    expect(lines.map((l) => JSON.parse(l).msg)).toEqual(['after', 'one after']);
    expect(vEnabled(child, 10)).toBe(true);
  });

  it('a logger made with a level and no --v writes V(2) and up by its level, never V(1)', () => {
    const lines: string[] = [];
    const logger = createLogger({ level: 'debug', destination: { write: (s: string) => void lines.push(s) } });
    logV(logger, 1, {}, 'one');
    logV(logger, 2, {}, 'two');
    logV(logger, 10, {}, 'ten');
    expect(lines.map((l) => JSON.parse(l).msg)).toEqual(['two']);
  });
});
