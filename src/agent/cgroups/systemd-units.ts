/**
 * systemd's manager as the systemd cgroup driver uses it (upstream's libcontainer systemd manager, through the
 * kubelet's cgroup manager): a cgroup is a transient slice unit, started with accounting on and no default
 * dependencies and `Wants=` its parent slice, its resources set as unit properties (so that systemd, which owns the
 * cgroup, keeps them rather than resetting them to its defaults when it next applies the unit's settings), and
 * stopped to remove it.
 *
 * Calls go through busctl on the system bus (lib/busctl.ts), as go-systemd's connection does on a node.
 */
import { busctl } from '../../lib/busctl.js';
import { messageOf } from '../../lib/errors.js';
import { cpuSharesToWeight, type ResourceConfig } from '../../lib/cgroup-limits.js';

const MANAGER = ['org.freedesktop.systemd1', '/org/freedesktop/systemd1', 'org.freedesktop.systemd1.Manager'] as const;
/** How long a unit's start or stop may take (libcontainer's 30 s). */
const JOB_TIMEOUT_MS = 30_000;
/** systemd's "infinity" for a uint64 property. */
const INFINITY = '18446744073709551615';

/** A unit property: its name, D-Bus signature and value, as busctl takes them. */
export type UnitProperty =
  | readonly [name: string, signature: 'b', value: boolean]
  | readonly [name: string, signature: 't', value: string]
  | readonly [name: string, signature: 's', value: string]
  | readonly [name: string, signature: 'as', value: readonly string[]];

/** busctl's arguments for an `a(sv)` of `properties`. Pure. */
export function propertyArguments(properties: readonly UnitProperty[]): string[] {
  const out = [String(properties.length)];
  for (const [name, signature, value] of properties) {
    out.push(name, signature);
    if (signature === 'as') out.push(String(value.length), ...value);
    else out.push(String(value));
  }
  return out;
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

/** The unit's ActiveState ('' when it is not loaded). */
async function activeState(unit: string): Promise<string> {
  const answer = await busctl([
    'get-property',
    MANAGER[0],
    unitObjectPath(unit),
    'org.freedesktop.systemd1.Unit',
    'ActiveState',
  ]).catch(() => '');
  if (!answer) return '';
  const state = (JSON.parse(answer) as { data?: unknown }).data;
  return typeof state === 'string' ? state : '';
}

/** Polls the unit until `done(state)`; throws after the job timeout. */
async function waitForState(unit: string, done: (state: string) => boolean, what: string): Promise<void> {
  const end = Date.now() + JOB_TIMEOUT_MS;
  for (let delay = 5; ; delay = Math.min(delay * 2, 200)) {
    const state = await activeState(unit);
    if (done(state)) return;
    if (state === 'failed') throw new Error(`unit ${unit} failed to ${what}`);
    if (Date.now() > end)
      throw new Error(`timed out waiting for unit ${unit} to ${what} (state ${state || 'unloaded'})`);
    await pause(delay);
  }
}

/** systemd's manager on the system bus. */
export function systemdUnits(): SystemdUnits {
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
        await busctl([
          'call',
          ...MANAGER,
          'StartTransientUnit',
          'ssa(sv)a(sa(sv))',
          slice,
          'replace',
          ...propertyArguments(all),
          '0',
        ]);
      } catch (err) {
        // org.freedesktop.systemd1.UnitExists: made before (by this kubelet, or a runtime naming it as a parent).
        if (!/already (exists|loaded)/i.test(messageOf(err))) throw err;
        return 'existed';
      }
      await waitForState(slice, (state) => state === 'active', 'start');
      return 'started';
    },
    async setProperties(unit, properties) {
      if (!properties.length) return;
      await busctl([
        'call',
        ...MANAGER,
        'SetUnitProperties',
        'sba(sv)',
        unit,
        'true',
        ...propertyArguments(properties),
      ]);
    },
    async stopUnit(unit) {
      try {
        await busctl(['call', ...MANAGER, 'StopUnit', 'ss', unit, 'replace']);
      } catch (err) {
        // org.freedesktop.systemd1.NoSuchUnit: gone already.
        if (/not loaded/i.test(messageOf(err))) return;
        throw err;
      }
      await waitForState(unit, (state) => state === '' || state === 'inactive', 'stop');
    },
  };
}
