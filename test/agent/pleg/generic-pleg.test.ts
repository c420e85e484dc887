/**
 * The generic PLEG: events from the difference between two relists, and the short cut that skips
 * the comparison when the runtime client handed back the very same (frozen) list.
 */
import { describe, expect, it } from 'vitest';
import type * as cri from '../../../src/cri/types.js';
import { diffRelist, GenericPleg, unchangedList } from '../../../src/agent/pleg/generic-pleg.js';
import { PodUidLabel } from '../../../src/agent/runtime/labels.js';
import { realClock } from '../../../src/lib/clock.js';
import { silentLogger as logger } from '../../../src/lib/logger.js';

const container = (id: string, uid: string, state: string): cri.Container =>
  ({ id, labels: { [PodUidLabel]: uid }, state }) as unknown as cri.Container;
const sandbox = (id: string, uid: string, state: string): cri.PodSandbox =>
  ({ id, labels: { [PodUidLabel]: uid }, state }) as unknown as cri.PodSandbox;

function plegOver(lists: () => { sandboxes: readonly cri.PodSandbox[]; containers: readonly cri.Container[] }) {
  return new GenericPleg({ listAll: async () => lists(), clock: realClock, logger, periodMs: 1000 });
}

describe('diffRelist', () => {
  it('names the change of each pod, a container change winning over its sandbox', () => {
    const prev = new Map([
      ['a|s|s1', 'SANDBOX_READY'],
      ['a|c|c1', 'CONTAINER_RUNNING'],
      ['b|c|c2', 'CONTAINER_RUNNING'],
    ]);
    const next = new Map([
      ['a|s|s1', 'SANDBOX_NOTREADY'],
      ['a|c|c1', 'CONTAINER_EXITED'],
      ['c|c|c3', 'CONTAINER_CREATED'],
    ]);
    expect(diffRelist(prev, next).sort((x, y) => x.uid.localeCompare(y.uid))).toEqual([
      { uid: 'a', type: 'ContainerDied' },
      { uid: 'b', type: 'ContainerRemoved' },
      { uid: 'c', type: 'ContainerChanged' },
    ]);
  });
});

describe('GenericPleg.relist', () => {
  it('reports nothing for the same frozen list, and a change once the list is a new one', async () => {
    const sandboxes = Object.freeze([Object.freeze(sandbox('s1', 'a', 'SANDBOX_READY'))]);
    let containers = Object.freeze([Object.freeze(container('c1', 'a', 'CONTAINER_RUNNING'))]);
    const pleg = plegOver(() => ({ sandboxes, containers }));
    expect(await pleg.relist()).toEqual([{ uid: 'a', type: 'ContainerStarted' }]);
    expect(await pleg.relist()).toEqual([]);
    containers = Object.freeze([Object.freeze(container('c1', 'a', 'CONTAINER_EXITED'))]);
    expect(await pleg.relist()).toEqual([{ uid: 'a', type: 'ContainerDied' }]);
    expect(pleg.runningCounts()).toEqual({ pods: 1, containers: { exited: 1 } });
  });

  it('compares a list that is not frozen even when it is the same array (a runtime may change its own)', async () => {
    const containers = [container('c1', 'a', 'CONTAINER_RUNNING')];
    const pleg = plegOver(() => ({ sandboxes: [], containers }));
    await pleg.relist();
    containers[0] = container('c1', 'a', 'CONTAINER_EXITED');
    expect(await pleg.relist()).toEqual([{ uid: 'a', type: 'ContainerDied' }]);
  });

  it('notices an item gone or added in a new list of the same frozen items', async () => {
    const a = Object.freeze(container('c1', 'a', 'CONTAINER_RUNNING'));
    const b = Object.freeze(container('c2', 'b', 'CONTAINER_RUNNING'));
    let containers = Object.freeze([a, b]);
    const pleg = plegOver(() => ({ sandboxes: [], containers }));
    await pleg.relist();
    containers = Object.freeze([a]);
    expect(await pleg.relist()).toEqual([{ uid: 'b', type: 'ContainerRemoved' }]);
    containers = Object.freeze([b, a]);
    expect(await pleg.relist()).toEqual([{ uid: 'b', type: 'ContainerStarted' }]);
  });
});

describe('unchangedList', () => {
  it('holds only for the same frozen array', () => {
    const x = Object.freeze([{}]);
    expect(unchangedList(x, x)).toBe(true);
    expect(unchangedList(x, Object.freeze([...x]))).toBe(false);
    const m = [{}];
    expect(unchangedList(m, m)).toBe(false);
  });
});
