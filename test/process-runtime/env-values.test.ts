/**
 * Env values reach the process runtime as bytes when they come over gRPC (CRI's KeyValue.value is `bytes` since
 * cri-api v1.36.2) and may be bytes from the kubelet in-process (a Secret's value that is not UTF-8): a process's
 * environment is text, so each is read as UTF-8, and the container's record keeps that text.
 */
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { processRuntimeFixture, runSandbox } from './runtime-fixture.js';
import { until } from '../e2e/helpers.js';

const { dir, runtime } = processRuntimeFixture('tsk-env-values-');

describe('env values given as bytes', () => {
  it('reach the process as their UTF-8 text, and the saved record holds text', async () => {
    const { sandboxId, sandboxConfig } = await runSandbox(runtime, dir, 'u-env-values');
    const id = await runtime.createContainer(
      sandboxId,
      {
        metadata: { name: 'main', attempt: 0 },
        image: { image: 'busybox' },
        command: ['sh', '-c', 'echo "greeting=$GREETING plain=$PLAIN"; exec sleep 3600'],
        log_path: 'main/0.log',
        envs: [
          { key: 'GREETING', value: Buffer.from('héllo', 'utf8') },
          { key: 'PLAIN', value: 'text' },
        ],
      },
      sandboxConfig,
    );
    await runtime.startContainer(id);
    const log = join(dir, 'logs', 'main', '0.log');
    await until(() => readFileSync(log, 'utf8').includes('greeting=héllo plain=text'), 10_000, 'the env echoed');
    const records = readdirSync(join(dir, 'state'), { recursive: true, encoding: 'utf8' })
      .map((f) => join(dir, 'state', f))
      .filter((f) => f.endsWith('.json'))
      .map((f) => readFileSync(f, 'utf8'))
      .filter((text) => text.includes('GREETING'));
    expect(records.length).toBeGreaterThan(0);
    for (const text of records) expect(text).toContain('{"key":"GREETING","value":"héllo"}');
    await runtime.stopContainer(id, 0);
    await runtime.stopPodSandbox(sandboxId);
  }, 30_000);
});
