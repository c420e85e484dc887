/**
 * ListPodSandboxStats → the pod samples of /stats/summary (network with its default interface,
 * process count), and the process runtime's sums per sandbox.
 */
import { describe, expect, it } from 'vitest';
import { podSamples } from '../../../src/agent/stats/samples.js';
import { sandboxStats } from '../../../src/process-runtime/container-stats.js';
import type * as cri from '../../../src/cri/types.js';

const meta = (uid: string) => ({ name: `p-${uid}`, namespace: 'default', uid, attempt: 0 });
const u = (value: number) => ({ value });

describe('pod samples', () => {
  it('keeps every interface, names the default one (added when missing from the list), and the process count', () => {
    const stats: cri.PodSandboxStats[] = [
      {
        attributes: { id: 's1', metadata: meta('u1'), labels: {}, annotations: {} },
        linux: {
          network: {
            timestamp: 1,
            default_interface: { name: 'eth0', rx_bytes: u(10), rx_errors: u(0), tx_bytes: u(20), tx_errors: u(1) },
            interfaces: [{ name: 'eth1', rx_bytes: u(5), tx_bytes: u(6) }],
          },
          process: { timestamp: 1, process_count: u(3) },
        },
      },
      {
        attributes: { id: 's2', metadata: meta('u2'), labels: {}, annotations: {} },
        linux: { process: { timestamp: 1, process_count: u(0) } },
      },
      { attributes: { id: 's3', metadata: { ...meta(''), uid: '' }, labels: {}, annotations: {} } },
    ];
    const out = podSamples(stats);
    expect([...out.keys()]).toEqual(['u1', 'u2']);
    expect(out.get('u1')).toEqual({
      podUid: 'u1',
      network: {
        defaultName: 'eth0',
        interfaces: [
          { name: 'eth0', rxBytes: 10, rxErrors: 0, txBytes: 20, txErrors: 1 },
          { name: 'eth1', rxBytes: 5, rxErrors: 0, txBytes: 6, txErrors: 0 },
        ],
      },
      processCount: 3,
    });
    // Unknown network is left out, a zero count is kept.
    expect(out.get('u2')).toEqual({ podUid: 'u2', network: undefined, processCount: 0 });
  });

  it('sums a sandbox’s running containers and their processes (process runtime)', () => {
    const sb = (id: string): cri.PodSandbox => ({
      id,
      metadata: meta(id),
      state: 'SANDBOX_READY',
      created_at: 0,
      labels: {},
      annotations: {},
    });
    const ctr = (id: string, sandbox: string) => ({ id, pod_sandbox_id: sandbox }) as cri.Container;
    const st = (cpu: number, ws: number) =>
      ({
        attributes: {},
        cpu: { timestamp: 1, usage_core_nano_seconds: u(cpu) },
        memory: { timestamp: 1, working_set_bytes: u(ws), usage_bytes: u(ws), rss_bytes: u(ws) },
      }) as cri.ContainerStats;
    const out = sandboxStats(
      [sb('a'), sb('b')],
      [ctr('1', 'a'), ctr('2', 'b'), ctr('3', 'a')],
      [st(100, 10), st(5, 1), st(50, 20)],
      [2, 1, 4],
      7,
    );
    expect(out[0].linux?.cpu?.usage_core_nano_seconds?.value).toBe(150);
    expect(out[0].linux?.memory?.working_set_bytes?.value).toBe(30);
    expect(out[0].linux?.process?.process_count?.value).toBe(6);
    expect(out[0].linux?.containers).toHaveLength(2);
    expect(out[1].linux?.process?.process_count?.value).toBe(1);
    expect(out[1].attributes.metadata.uid).toBe('b');
  });
});
