/**
 * The plugin watcher against plugins served by grpc-js on real unix sockets: registration and
 * its status, refusals (unknown type, invalid, failed registration, retried), a re-created socket
 * registers again, a removed one deregisters, other files are ignored.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PluginWatcher, type PluginHandler } from '../../../src/agent/pluginmanager/plugin-watcher.js';
import { realClock } from '../../../src/lib/clock.js';
import { createLogger } from '../../../src/lib/logger.js';
import { startFakeCsiDriver, type FakeCsiDriver } from '../../fixtures/fake-csi-driver.js';

const dirs: string[] = [];
const drivers: FakeCsiDriver[] = [];
afterEach(async () => {
  for (const d of drivers.splice(0)) await d.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function setup(handler: Partial<PluginHandler> = {}) {
  const root = mkdtempSync(join(tmpdir(), 'tsk-pw-'));
  dirs.push(root);
  const log: string[] = [];
  const h: PluginHandler = {
    validate: handler.validate ?? (() => {}),
    register:
      handler.register ??
      (async (name, endpoint, versions) => void log.push(`register ${name} ${endpoint} ${versions.join(',')}`)),
    deregister: handler.deregister ?? (async (name, endpoint) => void log.push(`deregister ${name} ${endpoint}`)),
  };
  const watcher = new PluginWatcher({
    dir: join(root, 'plugins_registry'),
    handlers: { CSIPlugin: h },
    clock: realClock,
    logger: createLogger({ level: 'fatal' }),
    rescanMs: 60_000,
  });
  return { root, log, watcher };
}

/** Waits (up to 5 s) until the driver's registrar has heard a registration status: a retry with no filesystem event. */
async function statusHeard(d: FakeCsiDriver): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!d.statuses.length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
}

describe('PluginWatcher', () => {
  it('registers a plugin socket, tells it so, ignores other files and deregisters when the socket goes', async () => {
    const { root, log, watcher } = setup();
    const ac = new AbortController();
    await watcher.start({ signal: ac.signal });
    writeFileSync(join(root, 'plugins_registry', 'not-a-socket'), 'x');
    const d = await startFakeCsiDriver({ root, backing: join(root, 'b'), versions: ['1.0.0', '1.5.0'] });
    drivers.push(d);
    await watcher.scan();
    expect(log).toEqual([`register fake.csi.k8s.io ${d.driverSocket} 1.0.0,1.5.0`]);
    expect(d.statuses).toEqual([{ plugin_registered: true, error: '' }]);
    await watcher.scan();
    expect(log).toHaveLength(1);
    await d.close();
    await watcher.scan();
    expect(log).toEqual([
      `register fake.csi.k8s.io ${d.driverSocket} 1.0.0,1.5.0`,
      `deregister fake.csi.k8s.io ${d.driverSocket}`,
    ]);
    ac.abort();
  });

  it('counts a plugin as registered (actual_state_of_world) before its handler registers it, as upstream', async () => {
    const seen: unknown[] = [];
    const { root, watcher } = setup({ register: async () => void seen.push(watcher.pluginCounts()) });
    const d = await startFakeCsiDriver({ root, backing: join(root, 'b') });
    drivers.push(d);
    await watcher.scan();
    const counted = [
      { socketPath: d.registrationSocket, state: 'actual_state_of_world' },
      { socketPath: d.registrationSocket, state: 'desired_state_of_world' },
    ];
    // Counted while its handler ran, so a plugin that hears it is registered is never missing from the metric.
    expect(seen).toEqual([counted]);
    expect(watcher.pluginCounts()).toEqual(counted);
  });

  it('a plugin whose registration fails is not counted as registered', async () => {
    const { root, watcher } = setup({
      register: async () => {
        throw new Error('driver unreachable');
      },
    });
    const d = await startFakeCsiDriver({ root, backing: join(root, 'b') });
    drivers.push(d);
    await watcher.scan();
    expect(watcher.pluginCounts()).toEqual([{ socketPath: d.registrationSocket, state: 'desired_state_of_world' }]);
  });

  it('a re-created socket (a restarted registrar) is registered again', async () => {
    const { root, log, watcher } = setup();
    const d1 = await startFakeCsiDriver({ root, backing: join(root, 'b') });
    drivers.push(d1);
    await watcher.scan();
    await d1.close();
    const d2 = await startFakeCsiDriver({ root, backing: join(root, 'b') });
    drivers.push(d2);
    await watcher.scan();
    expect(log.map((l) => l.split(' ')[0])).toEqual(['register', 'deregister', 'register']);
    expect(d2.statuses).toEqual([{ plugin_registered: true, error: '' }]);
  });

  it('refuses an unknown type, an invalid plugin and a failed registration with upstream texts, and retries on the next scan', async () => {
    const { root, watcher } = setup({
      validate: (name) => {
        if (name === 'bad.csi') throw new Error('nope');
      },
      register: async (name) => {
        if (name === 'failing.csi') throw new Error('driver unreachable');
      },
    });
    const dra = await startFakeCsiDriver({ root, backing: join(root, 'b'), name: 'dra.example', type: 'DRAPlugin' });
    const bad = await startFakeCsiDriver({ root, backing: join(root, 'b'), name: 'bad.csi' });
    const failing = await startFakeCsiDriver({ root, backing: join(root, 'b'), name: 'failing.csi' });
    drivers.push(dra, bad, failing);
    await watcher.scan();
    expect(dra.statuses).toEqual([
      {
        plugin_registered: false,
        error: `RegisterPlugin error -- no handler registered for plugin type: DRAPlugin at socket ${dra.registrationSocket}`,
      },
    ]);
    expect(bad.statuses).toEqual([
      { plugin_registered: false, error: 'RegisterPlugin error -- plugin validation failed with err: nope' },
    ]);
    expect(failing.statuses).toEqual([
      {
        plugin_registered: false,
        error: 'RegisterPlugin error -- plugin registration failed with err: driver unreachable',
      },
    ]);
    await watcher.scan();
    expect(failing.statuses).toHaveLength(1); // backing off
    await new Promise((r) => setTimeout(r, 1100));
    await watcher.scan();
    expect(failing.statuses).toHaveLength(2);
  });

  it('a plugin that did not hear it was registered is deregistered and registered again (v1.36, #133335)', async () => {
    const { root, log, watcher } = setup();
    const d = await startFakeCsiDriver({ root, backing: join(root, 'b') });
    drivers.push(d);
    d.fail('NotifyRegistrationStatus', 14 /* UNAVAILABLE */, 1);
    const ac = new AbortController();
    await watcher.start({ signal: ac.signal });
    await watcher.scan();
    expect(log).toEqual([
      `register fake.csi.k8s.io ${d.driverSocket} 1.0.0`,
      `deregister fake.csi.k8s.io ${d.driverSocket}`,
    ]);
    // Tried again after the back-off's first half second, with no filesystem event.
    await statusHeard(d);
    expect(d.statuses).toEqual([{ plugin_registered: true, error: '' }]);
    expect(log).toHaveLength(3);
    expect(log[2]).toBe(`register fake.csi.k8s.io ${d.driverSocket} 1.0.0`);
    ac.abort();
  });

  it('a plugin whose GetInfo failed (not ready yet) is tried again after the back-off, with no filesystem event', async () => {
    const { root, watcher } = setup();
    const d = await startFakeCsiDriver({ root, backing: join(root, 'b') });
    drivers.push(d);
    d.fail('GetInfo', 14 /* UNAVAILABLE */, 1);
    const ac = new AbortController();
    await watcher.start({ signal: ac.signal });
    await watcher.scan();
    expect(d.statuses).toEqual([]);
    await statusHeard(d);
    expect(d.statuses).toEqual([{ plugin_registered: true, error: '' }]);
    expect(d.calls.filter((c) => c.method === 'GetInfo')).toHaveLength(2);
    ac.abort();
  });
});
