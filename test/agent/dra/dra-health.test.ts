/**
 * DRA device health (ResourceHealthStatus): a real grpc-js driver's NodeWatchResources stream, what
 * it said of a device held for the device's timeout and then Unknown, the message bounded as
 * upstream, and every device Unknown once the stream ends.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DraHealth, boundedHealthMessage } from '../../../src/agent/dra/dra-health.js';
import { silentLogger as logger } from '../../../src/lib/logger.js';
import { startSampleDraDriver } from '../../fixtures/sample-dra-driver.js';

const dir = mkdtempSync(join(tmpdir(), 'tsk-dra-health-'));
mkdirSync(join(dir, 'plugins_registry'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('DRA device health', () => {
  it('keeps what the driver said for the device’s timeout, then Unknown; Unknown for all once the stream ends', async () => {
    const driver = await startSampleDraDriver({
      root: dir,
      name: 'h.example.com',
      cdiKind: 'h.example.com/x',
      health: 'v1beta1',
    });
    let now = 1_000_000;
    const changes: string[] = [];
    const health = new DraHealth({ logger, now: () => now, onChange: (d) => void changes.push(d) });
    try {
      health.watch('h.example.com', join(dir, 'h.example.com-dra.sock'));
      expect(health.healthOf('h.example.com', 'node', 'a')).toEqual({ health: 'Unknown' });
      await driver.reportHealth([
        { device: 'a', health: 'UNHEALTHY', message: 'x'.repeat(2000), timeoutSeconds: 5 },
        { device: 'b', health: 'HEALTHY' },
      ]);
      for (let i = 0; i < 100 && !changes.length; i++) await new Promise((r) => setTimeout(r, 20));
      expect(changes).toEqual(['h.example.com']);
      expect(health.healthOf('h.example.com', 'node', 'a')).toEqual({
        health: 'Unhealthy',
        message: `${'x'.repeat(1021)}...`,
      });
      expect(health.healthOf('h.example.com', 'node', 'b')).toEqual({ health: 'Healthy' });
      // Its own timeout (5 s) for one, the default (30 s) for the other.
      now += 6_000;
      expect(health.healthOf('h.example.com', 'node', 'a')).toEqual({ health: 'Unknown' });
      expect(health.healthOf('h.example.com', 'node', 'b')).toEqual({ health: 'Healthy' });
      now += 30_000;
      expect(health.healthOf('h.example.com', 'node', 'b')).toEqual({ health: 'Unknown' });
      // The driver goes away: what it said no longer holds.
      now -= 36_000;
      driver.close();
      for (let i = 0; i < 100 && changes.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
      expect(changes).toEqual(['h.example.com', 'h.example.com']);
      expect(health.healthOf('h.example.com', 'node', 'b')).toEqual({ health: 'Unknown' });
    } finally {
      health.close();
      driver.close();
    }
  });

  it('bounds a message as upstream: 1024 characters at most', () => {
    expect(boundedHealthMessage('short')).toBe('short');
    expect(boundedHealthMessage('y'.repeat(1024))).toBe('y'.repeat(1024));
    expect(boundedHealthMessage('y'.repeat(1025))).toHaveLength(1024);
  });
});
