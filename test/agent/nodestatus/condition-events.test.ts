/** The Node events of the pressure conditions (upstream's condition setters): on a change of status only. */
import { describe, expect, it } from 'vitest';
import { pressureConditionEvents } from '../../../src/agent/nodestatus/condition-events.js';
import type { NodeCondition } from '../../../src/agent/nodestatus/node-object.js';

const conditions = (memory: string, disk: string, pid: string, ready = 'True') =>
  [
    ['MemoryPressure', memory],
    ['DiskPressure', disk],
    ['PIDPressure', pid],
    ['Ready', ready],
  ].map(([type, status]) => ({ type, status })) as NodeCondition[];

describe('pressure condition events', () => {
  it("a new Node's first report records each condition's event; the same statuses again record none", () => {
    expect(pressureConditionEvents(undefined, conditions('False', 'False', 'False'))).toEqual([
      'NodeHasSufficientMemory',
      'NodeHasNoDiskPressure',
      'NodeHasSufficientPID',
    ]);
    expect(
      pressureConditionEvents(conditions('False', 'False', 'False'), conditions('False', 'False', 'False')),
    ).toEqual([]);
  });

  it('a change records the new status; back again records the other', () => {
    expect(pressureConditionEvents(conditions('False', 'False', 'False'), conditions('True', 'False', 'True'))).toEqual(
      ['NodeHasInsufficientMemory', 'NodeHasInsufficientPID'],
    );
    expect(pressureConditionEvents(conditions('True', 'True', 'False'), conditions('False', 'False', 'False'))).toEqual(
      ['NodeHasSufficientMemory', 'NodeHasNoDiskPressure'],
    );
    // Unknown (a Node the node lifecycle controller marked) to False is a change too.
    expect(
      pressureConditionEvents(conditions('Unknown', 'False', 'False'), conditions('False', 'False', 'False')),
    ).toEqual(['NodeHasSufficientMemory']);
  });
});
