/**
 * systemd's manager as the systemd cgroup driver uses it (upstream's libcontainer systemd manager, through the
 * kubelet's cgroup manager): a cgroup is a transient slice unit, started with accounting on and no default
 * dependencies and `Wants=` its parent slice, its resources set as unit properties (so that systemd, which owns the
 * cgroup, keeps them rather than resetting them to its defaults when it next applies the unit's settings), and
 * stopped to remove it.
 *
 * Calls go to systemd's manager on the system bus (lib/system-bus.ts), as go-systemd's connection makes them on a node.
 */
import { DBusError, systemBus, type SystemBus } from '../../lib/system-bus.js';
import { cpuSharesToWeight, type ResourceConfig } from '../../lib/cgroup-limits.js';

const MANAGER = {
  destination: 'org.freedesktop.systemd1',
  path: '/org/freedesktop/systemd1',
  interface: 'org.freedesktop.systemd1.Manager',
} as const;
/** How long a unit's start or stop may take (libcontainer's 30 s). */
const JOB_TIMEOUT_MS = 30_000;
/** systemd's "infinity" for a uint64 property. */
const INFINITY = '18446744073709551615';

/** A unit property: its name, D-Bus signature and value. */
export type UnitProperty =
  | readonly [name: string, signature: 'b', value: boolean]
  | readonly [name: string, signature: 't', value: string]
  | readonly [name: string, signature: 's', value: string]
  | readonly [name: string, signature: 'as', value: readonly string[]];

/** `properties` as the body of an `a(sv)` (a variant is `[signature, value]`). Pure. */
export function propertyVariants(properties: readonly UnitProperty[]): [string, [string, unknown]][] {
  return properties.map(([name, signature, value]) => [name, [signature, value]]);
}

/**
 * The properties that carry `config` (libcontainer genV1ResourcesProperties / genV2ResourcesProperties). Pure.
 * v1: CPUShares, MemoryLimit; v2: CPUWeight, MemoryMax. Both: CPUQuotaPerSecUSec (rounded up to whole
 * percents of a CPU, as systemd keeps it, so that a child's quota fits), CPUQuotaPeriodUSec, TasksMax.
 */
export function resourceProperties(config: ResourceConfig, version: 1 | 2): UnitProperty[] {
  const out: UnitProperty[] = [];
  const limit = (n: number) => (n < 0 ? INFINITY : String(n));
  if (config.cpuShares !== undefined && config.cpuShares !== 0)
    out.push(
      version === 1
        ? ['CPUShares', 't', String(config.cpuShares)]
        : ['CPUWeight', 't', String(cpuSharesToWeight(config.cpuShares))],
    );
  if (config.memoryLimit !== undefined && config.memoryLimit !== 0)
    out.push([version === 1 ? 'MemoryLimit' : 'MemoryMax', 't', limit(config.memoryLimit)]);
  const quota = config.cpuQuota ?? 0;
  const period = config.cpuPeriod ?? 0;
  if (quota !== 0 || period !== 0) {
    if (period !== 0) out.push(['CPUQuotaPeriodUSec', 't', String(period)]);
    let perSecond = INFINITY;
    if (quota > 0) {
      const microseconds = Math.floor((quota * 1_000_000) / (period || 100_000));
      perSecond = String(Math.ceil(microseconds / 10_000) * 10_000);
    }
    out.push(['CPUQuotaPerSecUSec', 't', perSecond]);
  }
  if (config.pidsLimit !== undefined && (config.pidsLimit > 0 || config.pidsLimit === -1))
    out.push(['TasksMax', 't', limit(config.pidsLimit)]);
  return out;
}

/** The slice a slice unit is in (systemd's naming rule): `a-b-c.slice` → `a-b.slice`, `a.slice` → `-.slice`. Pure. */
export function parentSlice(slice: string): string {
  const base = slice.replace(/\.slice$/, '');
  const dash = base.lastIndexOf('-');
  return dash < 0 ? '-.slice' : `${base.slice(0, dash)}.slice`;
}

/** A unit's object path on the bus (sd-bus's label escaping: every byte but [A-Za-z0-9] as `_xx`). Pure. */
export function unitObjectPath(unit: string): string {
  const label = [...Buffer.from(unit, 'utf8')]
    .map((b) => (/[A-Za-z0-9]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `_${b.toString(16)}`))
    .join('');
  return `/org/freedesktop/systemd1/unit/${label}`;
}

/** What the cgroup managers need of systemd. */
export interface SystemdUnits {
  /**
   * Starts the transient slice `slice` with `properties` and waits for it to be active: 'started'. A slice that exists
   * already is left as it is: 'existed' (its properties are then for `setProperties`).
   */
  startSlice(slice: string, properties: readonly UnitProperty[]): Promise<'started' | 'existed'>;
  /** Sets `properties` on a running unit (runtime: not written to disk). */
  setProperties(unit: string, properties: readonly UnitProperty[]): Promise<void>;
  /** Stops `unit` and waits for it to be gone; a unit that is not loaded is stopped already. */
  stopUnit(unit: string): Promise<void>;
}

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Whether `error` is the D-Bus error `name`. */
const isDBusError = (error: unknown, name: string) => error instanceof DBusError && error.errorName === name;

/** systemd's manager on `bus` (default: the system bus). */
export function systemdUnits(bus: SystemBus = systemBus()): SystemdUnits {
  /** The unit's ActiveState ('' when it is not loaded). */
  const activeState = async (unit: string): Promise<string> => {
    const [variant] = await bus
      .call({
        destination: MANAGER.destination,
        path: unitObjectPath(unit),
        interface: 'org.freedesktop.DBus.Properties',
        member: 'Get',
        signature: 'ss',
        body: ['org.freedesktop.systemd1.Unit', 'ActiveState'],
      })
      .catch(() => [undefined]);
    // A variant comes back as [its signature, [its value]].
    const state = (variant as [unknown, unknown[]] | undefined)?.[1]?.[0];
    return typeof state === 'string' ? state : '';
  };
  /** Polls the unit until `done(state)`; throws after the job timeout. */
  const waitForState = async (unit: string, done: (state: string) => boolean, what: string) => {
    const end = performance.now() + JOB_TIMEOUT_MS;
    for (let delay = 2; ; delay = Math.min(delay * 2, 200)) {
      const state = await activeState(unit);
      if (done(state)) return;
      if (state === 'failed') throw new Error(`unit ${unit} failed to ${what}`);
      if (performance.now() > end)
        throw new Error(`timed out waiting for unit ${unit} to ${what} (state ${state || 'unloaded'})`);
      await pause(delay);
    }
  };
  return {
    async startSlice(slice, properties) {
      const all: UnitProperty[] = [
        ['Description', 's', `libcontainer container ${slice}`],
        ['Wants', 'as', [parentSlice(slice)]],
        ['MemoryAccounting', 'b', true],
        ['CPUAccounting', 'b', true],
        ['TasksAccounting', 'b', true],
        ['DefaultDependencies', 'b', false],
        ...properties,
      ];
      try {
        await bus.call({
          ...MANAGER,
          member: 'StartTransientUnit',
          signature: 'ssa(sv)a(sa(sv))',
          body: [slice, 'replace', propertyVariants(all), []],
        });
      } catch (error) {
        // Made before (by this kubelet, or a runtime naming it as a parent).
        if (isDBusError(error, 'org.freedesktop.systemd1.UnitExists')) return 'existed';
        throw error;
      }
      await waitForState(slice, (state) => state === 'active', 'start');
      return 'started';
    },
    async setProperties(unit, properties) {
      if (!properties.length) return;
      await bus.call({
        ...MANAGER,
        member: 'SetUnitProperties',
        signature: 'sba(sv)',
        body: [unit, true, propertyVariants(properties)],
      });
    },
    async stopUnit(unit) {
      try {
        await bus.call({ ...MANAGER, member: 'StopUnit', signature: 'ss', body: [unit, 'replace'] });
      } catch (error) {
        if (isDBusError(error, 'org.freedesktop.systemd1.NoSuchUnit')) return;
        throw error;
      }
      await waitForState(unit, (state) => state === '' || state === 'inactive', 'stop');
    },
  };
}
