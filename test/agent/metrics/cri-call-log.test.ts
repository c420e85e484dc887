/**
 * The CRI call log's lines (--v=10): upstream's messages, the ids of each call, never its configuration or credentials.
 */
import { describe, expect, it } from 'vitest';
import { criRequestLine, criResponseLine } from '../../../src/agent/metrics/cri-call-log.js';

const sandboxConfig = {
  metadata: { name: 'web', namespace: 'prod', uid: 'u1', attempt: 2 },
  hostname: 'web',
  annotations: { secret: 'hunter2' },
};

describe('CRI call log lines', () => {
  it("name the call as upstream's cri-client and carry its ids", () => {
    expect(criRequestLine('RemoteRuntimeService', 'runPodSandbox', [sandboxConfig, 'runc'])).toEqual({
      msg: '[RemoteRuntimeService] RunPodSandbox',
      fields: { pod: 'prod/web', podUID: 'u1', attempt: 2, runtimeHandler: 'runc' },
    });
    expect(criRequestLine('RemoteRuntimeService', 'stopContainer', ['c1', 30])).toEqual({
      msg: '[RemoteRuntimeService] StopContainer',
      fields: { containerID: 'c1', timeout: 30 },
    });
    expect(
      criRequestLine('RemoteRuntimeService', 'portForward', [{ pod_sandbox_id: 's1', port: [80] }]).fields,
    ).toEqual({ podSandboxID: 's1', port: [80] });
    expect(
      criRequestLine('RemoteRuntimeService', 'exec', [{ container_id: 'c1', cmd: ['cat', '/secret'] }]).fields,
    ).toEqual({ containerID: 'c1' });
    expect(criRequestLine('RemoteRuntimeService', 'listContainers', []).fields).toEqual({});
    expect(criRequestLine('RemoteRuntimeService', 'somethingNew', ['x'])).toEqual({
      msg: '[RemoteRuntimeService] SomethingNew',
      fields: {},
    });
    expect(criRequestLine('RemoteRuntimeService', 'toString', []).fields).toEqual({});
    expect(criResponseLine('RemoteRuntimeService', 'constructor', [], { result: 1 }, '1ms').fields).toEqual({
      duration: '1ms',
    });
  });

  it('never carry a configuration, a command or credentials', () => {
    const lines = [
      criRequestLine('RemoteRuntimeService', 'runPodSandbox', [sandboxConfig]),
      criRequestLine('RemoteRuntimeService', 'createContainer', [
        's1',
        { metadata: { name: 'main' }, image: { image: 'busybox' }, envs: [{ key: 'TOKEN', value: 'hunter2' }] },
        sandboxConfig,
      ]),
      criRequestLine('RemoteRuntimeService', 'execSync', ['c1', ['sh', '-c', 'echo hunter2'], 5]),
      criRequestLine('RemoteImageService', 'pullImage', [
        { image: 'registry/app:1' },
        { username: 'u', password: 'hunter2' },
        sandboxConfig,
      ]),
    ];
    expect(JSON.stringify(lines)).not.toContain('hunter2');
    expect(lines[1].fields).toEqual({ podSandboxID: 's1', container: 'main', attempt: undefined });
    expect(lines[3]).toEqual({ msg: '[RemoteImageService] PullImage', fields: { image: 'registry/app:1' } });
  });

  it('the response line adds what the call made, a list length or the error, and the duration', () => {
    expect(
      criResponseLine('RemoteRuntimeService', 'runPodSandbox', [sandboxConfig], { result: 's9' }, '1.5ms'),
    ).toEqual({
      msg: '[RemoteRuntimeService] RunPodSandbox Response',
      fields: { pod: 'prod/web', podUID: 'u1', attempt: 2, runtimeHandler: '', podSandboxID: 's9', duration: '1.5ms' },
    });
    expect(
      criResponseLine(
        'RemoteRuntimeService',
        'createContainer',
        ['s9', { metadata: { name: 'main', attempt: 0 } }],
        { result: 'c9' },
        '2ms',
      ).fields,
    ).toEqual({
      podSandboxID: 's9',
      container: 'main',
      attempt: 0,
      containerID: 'c9',
      duration: '2ms',
    });
    expect(
      criResponseLine('RemoteImageService', 'pullImage', [{ image: 'busybox' }], { result: 'sha256:abc' }, '1s').fields,
    ).toEqual({
      image: 'busybox',
      imageRef: 'sha256:abc',
      duration: '1s',
    });
    expect(criResponseLine('RemoteRuntimeService', 'listPodSandbox', [], { result: [1, 2, 3] }, '1ms').fields).toEqual({
      items: 3,
      duration: '1ms',
    });
    expect(
      criResponseLine('RemoteRuntimeService', 'startContainer', ['c1'], { error: new Error('boom') }, '1ms').fields,
    ).toEqual({
      containerID: 'c1',
      err: 'boom',
      duration: '1ms',
    });
  });
});
