/** Stop signals between the API's names and CRI's Signal enum (ContainerStopSignals), and on the wire. */
import { describe, expect, it } from 'vitest';
import { apiSignalOf, criSignalOf } from '../../src/cri/stop-signals.js';
import { criMethods } from '../../src/cri/proto.js';
import { encodeVarint } from '../../src/cri/wire.js';

describe('stop signal names', () => {
  it("spell the real-time offsets out as CRI's enum does, and back", () => {
    expect(criSignalOf('SIGUSR1')).toBe('SIGUSR1');
    expect(criSignalOf('SIGRTMIN+1')).toBe('SIGRTMINPLUS1');
    expect(criSignalOf('SIGRTMAX-14')).toBe('SIGRTMAXMINUS14');
    expect(criSignalOf('SIGRTMAX')).toBe('SIGRTMAX');
    expect(apiSignalOf('SIGRTMINPLUS15')).toBe('SIGRTMIN+15');
    expect(apiSignalOf('SIGRTMAXMINUS1')).toBe('SIGRTMAX-1');
    expect(apiSignalOf('SIGTERM')).toBe('SIGTERM');
  });

  it('make an unknown name the runtime default, and the runtime default no name', () => {
    expect(criSignalOf('SIGNOPE')).toBe('RUNTIME_DEFAULT');
    expect(criSignalOf('SIGRTMIN+16')).toBe('RUNTIME_DEFAULT');
    expect(apiSignalOf('RUNTIME_DEFAULT')).toBeUndefined();
    expect(apiSignalOf(undefined)).toBeUndefined();
  });

  it("are the proto's Signal enum, every value of it", () => {
    const create = criMethods('RuntimeService').CreateContainer;
    for (let value = 1; value <= 65; value++) {
      // CreateContainerRequest{config: ContainerConfig{stop_signal (18): value}}
      const config = Buffer.concat([encodeVarint((18 << 3) | 0), encodeVarint(value)]);
      const request = Buffer.concat([Buffer.from([(2 << 3) | 2, config.length]), config]);
      const name = (create.requestDeserialize(request) as { config: { stop_signal: string } }).config.stop_signal;
      expect(apiSignalOf(name), name).toBeDefined();
      expect(criSignalOf(apiSignalOf(name)!)).toBe(name);
    }
  });

  it("decodes a runtime's ContainerStatus.stop_signal (field 19, as containerd 2.1 and CRI-O send it)", () => {
    const status = criMethods('RuntimeService').ContainerStatus;
    // ContainerStatusResponse{status: ContainerStatus{id: "c1", stop_signal: SIGUSR1 (29)}}
    const inner = Buffer.concat([Buffer.from([0x0a, 0x02, 0x63, 0x31]), encodeVarint((19 << 3) | 0), encodeVarint(29)]);
    const response = Buffer.concat([Buffer.from([0x0a, inner.length]), inner]);
    const decoded = status.responseDeserialize(response) as { status: { id: string; stop_signal: string } };
    expect(decoded.status).toMatchObject({ id: 'c1', stop_signal: 'SIGUSR1' });
  });
});
