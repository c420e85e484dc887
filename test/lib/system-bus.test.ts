/**
 * The in-process system bus client against a real dbus-daemon with a real service on it (systemd-logind, from the
 * logind fixture): answers, D-Bus error answers by name, and a bus that goes away and comes back — calls fail with why
 * meanwhile, never hang, and the next call after its return connects again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DBusError, systemBus, type DBusCall } from '../../src/lib/system-bus.js';
import { startLogind, type Logind } from '../fixtures/logind.js';
import { useSystemBusAddress } from '../fixtures/system-bus-address.js';

const inhibitDelay: DBusCall = {
  destination: 'org.freedesktop.login1',
  path: '/org/freedesktop/login1',
  interface: 'org.freedesktop.DBus.Properties',
  member: 'Get',
  signature: 'ss',
  body: ['org.freedesktop.login1.Manager', 'InhibitDelayMaxUSec'],
};

describe('system bus', () => {
  const dir = mkdtempSync(join(tmpdir(), 'tsk-system-bus-'));
  let logind: Logind;
  let restoreBus = () => {};

  beforeAll(async () => {
    logind = await startLogind(join(dir, 'logind'), 7);
    restoreBus = useSystemBusAddress(logind.busAddress);
  }, 30_000);

  afterAll(async () => {
    restoreBus();
    await logind?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it("answers a call with its values (a variant as [signature, [value]]) and an error answer by the error's name", async () => {
    const bus = systemBus();
    try {
      const [variant] = await bus.call(inhibitDelay);
      expect((variant as [unknown, unknown[]])[1][0]).toBe(7_000_000);
      const error = await bus
        .call({
          ...inhibitDelay,
          interface: 'org.freedesktop.login1.Manager',
          member: 'NoSuchMethod',
          signature: '',
          body: [],
        })
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(DBusError);
      expect((error as DBusError).errorName).toBe('org.freedesktop.DBus.Error.UnknownMethod');
    } finally {
      bus.close();
    }
  });

  it('fails calls while the bus is gone and connects again once it is back', async () => {
    const bus = systemBus();
    try {
      await bus.call(inhibitDelay);
      await logind.stop();
      // The connection closed under it: the call fails with why, at once.
      await expect(bus.call(inhibitDelay)).rejects.toThrow(/system bus/);
      await logind.restart();
      const [variant] = await bus.call(inhibitDelay);
      expect((variant as [unknown, unknown[]])[1][0]).toBe(7_000_000);
    } finally {
      bus.close();
    }
  }, 30_000);
});
