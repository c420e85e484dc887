/**
 * The CRI client (cri/client.ts on cri/grpc-channel.ts, grpc-js) against a real grpc-js server serving
 * the project's CRI handlers: round trips, statuses and their details, deadlines, the receive
 * limit, a runtime that is not there yet, and one that restarts under the client. Then the
 * other way round: the process-runtime daemon's server (cri/server.ts on cri/grpc-server.ts)
 * called by a grpc-js client, as crictl or a Go kubelet would call it.
 */
import http2 from 'node:http2';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { until } from '../e2e/helpers.js';
import { createCriClient } from '../../src/cri/client.js';
import { serveCri } from '../../src/cri/server.js';
import * as grpcJs from '@grpc/grpc-js';
import { serveCriWithGrpcJs } from '../fixtures/grpc-js-cri-server.js';
import { grpcTarget, unaryChannel } from '../../src/cri/grpc-channel.js';
import { criMethods } from '../../src/cri/proto.js';
import type { ImageService, RuntimeService } from '../../src/cri/services.js';
import type * as cri from '../../src/cri/types.js';
import { KubeletError } from '../../src/lib/errors.js';
import { runtimeDetails, goStatusText } from '../../src/cri/grpc-errors.js';

const dirs: string[] = [];
const servers: grpc.Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.forceShutdown();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function socketPath(): string {
  const d = mkdtempSync(join(tmpdir(), 'tsk-cri-client-'));
  dirs.push(d);
  return join(d, 'cri.sock');
}

/** A runtime whose calls do what the test needs; the rest throw. */
function fakeRuntime(over: Partial<RuntimeService>): RuntimeService {
  return new Proxy(over, {
    get: (o, k: string) =>
      (o as Record<string, unknown>)[k] ?? (() => Promise.reject(new KubeletError('NotImplemented', `${k} not faked`))),
  }) as RuntimeService;
}
const noImages = fakeRuntime({}) as unknown as ImageService;

async function serve(path: string, rt: Partial<RuntimeService>) {
  const s = await serveCriWithGrpcJs(`unix://${path}`, fakeRuntime(rt), noImages);
  servers.push(s);
  return s;
}

const errorOf = (p: Promise<unknown>) =>
  p.then(
    () => {
      throw new Error('expected a failure');
    },
    (e: unknown) => e as KubeletError,
  );

describe('CRI client transport', () => {
  it('round-trips requests and responses, with int64, enum, bytes and repeated fields', async () => {
    const path = socketPath();
    await serve(path, {
      version: async (v) => ({ version: v, runtime_name: 'fake', runtime_version: '1', runtime_api_version: 'v1' }),
      execSync: async (id, cmd, timeout) => ({
        stdout: Buffer.from(`${id}:${cmd.join(',')}:${timeout}`),
        stderr: Buffer.from('é'),
        exit_code: 3,
      }),
      listContainers: async () =>
        [
          {
            id: 'c1',
            pod_sandbox_id: 's1',
            state: 'CONTAINER_EXITED',
            created_at: 1_700_000_000_123_456_000,
            labels: { a: 'b' },
            annotations: {},
            image_ref: 'x',
          },
        ] as never,
    });
    const c = createCriClient(path);
    try {
      expect(await c.runtime.version('0.1.0')).toMatchObject({ version: '0.1.0', runtime_name: 'fake' });
      const r = await c.runtime.execSync('abc', ['sh', '-c', 'x'], 7);
      expect([Buffer.from(r.stdout).toString(), Buffer.from(r.stderr).toString(), r.exit_code]).toEqual([
        'abc:sh,-c,x:7',
        'é',
        3,
      ]);
      const [ct] = await c.runtime.listContainers();
      expect(ct).toMatchObject({ id: 'c1', state: 'CONTAINER_EXITED', labels: { a: 'b' } });
      expect(Math.abs(ct.created_at - 1_700_000_000_123_456_000)).toBeLessThan(1024);
      // Many calls at once share one connection.
      const all = await Promise.all(Array.from({ length: 200 }, (_, i) => c.runtime.version(`v${i}`)));
      expect(all.map((v) => v.version)).toEqual(Array.from({ length: 200 }, (_, i) => `v${i}`));
    } finally {
      c.close?.();
    }
  });

  it("sends an env value's bytes as they are, text as UTF-8: KeyValue.value is bytes (cri-api v1.36.2)", async () => {
    const path = socketPath();
    let received: cri.ContainerConfig | undefined;
    await serve(path, {
      createContainer: async (_sandbox, config) => {
        received = config;
        return 'c1';
      },
    });
    const client = createCriClient(`unix://${path}`);
    const binary = Buffer.from([0xff, 0xfe, 0x41]);
    await client.runtime.createContainer(
      's1',
      {
        metadata: { name: 'main', attempt: 0 },
        image: { image: 'busybox' },
        envs: [
          { key: 'RAW', value: binary },
          { key: 'TEXT', value: 'é=1' },
        ],
      } as cri.ContainerConfig,
      { metadata: { name: 'p', namespace: 'd', uid: 'u', attempt: 0 } } as cri.PodSandboxConfig,
    );
    client.close?.();
    const values = new Map(received!.envs!.map((kv) => [kv.key, Buffer.from(kv.value as Uint8Array)]));
    expect(values.get('RAW')).toEqual(binary);
    expect(values.get('TEXT')?.toString('utf8')).toBe('é=1');
  });

  it('maps statuses to the error catalog, with the runtime details (non-ASCII and newlines kept)', async () => {
    const path = socketPath();
    await serve(path, {
      containerStatus: async () => {
        throw new KubeletError('NotFound', 'container "x" ünknown\nsecond line');
      },
    });
    const c = createCriClient(path);
    try {
      const e = await errorOf(c.runtime.containerStatus('x'));
      expect(e).toBeInstanceOf(KubeletError);
      expect(e.code).toBe('NotFound');
      expect(e.message).toBe('ContainerStatus: container "x" ünknown\nsecond line');
      // What upstream reports of a runtime failure: the runtime's own words, without the method.
      expect(runtimeDetails(e)).toBe('container "x" ünknown\nsecond line');
      expect(runtimeDetails(new Error('plain'))).toBe('plain');
      // Where upstream prints the error whole ("Failed to pull image …: rpc error: …"): grpc-go's status text.
      expect(goStatusText(e)).toBe('rpc error: code = NotFound desc = container "x" ünknown\nsecond line');
      expect(goStatusText(new Error('plain'))).toBe('plain');
      const u = await errorOf(c.runtime.removeContainer('x'));
      expect(u.code).toBe('NotImplemented');
    } finally {
      c.close?.();
    }
  });

  it("carries RuntimeConfig's cgroup driver both ways (SYSTEMD is proto3's zero value, off the wire); a runtime without it answers NotImplemented", async () => {
    const path = socketPath();
    let answer: cri.RuntimeConfigResponse = { linux: { cgroup_driver: 'SYSTEMD' } };
    await serve(path, { runtimeConfig: async () => answer });
    const c = createCriClient(path);
    try {
      expect((await c.runtime.runtimeConfig!()).linux?.cgroup_driver).toBe('SYSTEMD');
      answer = { linux: { cgroup_driver: 'CGROUPFS' } };
      expect((await c.runtime.runtimeConfig!()).linux?.cgroup_driver).toBe('CGROUPFS');
      answer = {};
      expect((await c.runtime.runtimeConfig!()).linux ?? undefined).toBeUndefined();
    } finally {
      c.close?.();
    }
    // Our own server, for a runtime without the method (cri/server.ts leaves it out).
    const path2 = socketPath();
    const server = await serveCri(
      `unix://${path2}`,
      { version: async () => ({}) } as unknown as RuntimeService,
      noImages,
    );
    const c2 = createCriClient(path2);
    try {
      expect((await errorOf(c2.runtime.runtimeConfig!())).code).toBe('NotImplemented');
    } finally {
      c2.close?.();
      await server.close();
    }
  });

  it('fails a call past its deadline with Timeout, and the connection stays usable', async () => {
    const path = socketPath();
    await serve(path, {
      execSync: () => new Promise(() => {}),
      version: async (v) => ({ version: v, runtime_name: 'fake', runtime_version: '1', runtime_api_version: 'v1' }),
    });
    const ch = unaryChannel(`unix://${path}`, { maxReceiveBytes: 1024 });
    const rs = criMethods('RuntimeService');
    try {
      const t0 = Date.now();
      const e = await errorOf(ch.call(rs.ExecSync as never, { container_id: 'a', cmd: ['x'], timeout: 1 }, 300));
      expect((e as unknown as { code: number }).code).toBe(4);
      expect(Date.now() - t0).toBeLessThan(5000);
      const v = (await ch.call(rs.Version as never, { version: 'again' }, 5000)) as { version: string };
      expect(v.version).toBe('again');
    } finally {
      ch.close();
    }
    // A closed channel answers Unavailable.
    expect(((await errorOf(ch.call(rs.Version as never, {}, 5000))) as unknown as { code: number }).code).toBe(14);
  });

  it("gives each call upstream's deadline from runtimeRequestTimeout, and none to PullImage or ExecSync without a timeout", async () => {
    // A bare HTTP/2 server that records each call's grpc-timeout and answers Unimplemented.
    const path = socketPath();
    const seen = new Map<string, string | undefined>();
    const server = http2.createServer();
    server.on('stream', (stream, headers) => {
      seen.set(String(headers[':path']).split('/').pop()!, headers['grpc-timeout'] as string | undefined);
      stream.respond(
        { ':status': 200, 'content-type': 'application/grpc', 'grpc-status': '12', 'grpc-message': 'no' },
        { endStream: true },
      );
    });
    await new Promise<void>((r) => server.listen(path, r));
    const c = createCriClient(`unix://${path}`, { requestTimeoutMs: 45_000 });
    try {
      const calls: Promise<unknown>[] = [
        // (each failure is collected at once, so none goes unhandled while an earlier one is awaited)
        c.runtime.listContainers(),
        c.runtime.listPodSandbox({ id: 'x' }),
        c.runtime.runPodSandbox({} as never),
        c.runtime.stopContainer('c', 30),
        c.runtime.containerStatus('c'),
        c.runtime.execSync('c', ['true'], 5),
        c.images.pullImage({ image: 'busybox' }),
        c.images.imageStatus({ image: 'busybox' }),
      ];
      for (const e of await Promise.all(calls.map(errorOf))) expect(e.code).toBe('NotImplemented');
      await errorOf(c.runtime.execSync('c', ['true'], 0));
    } finally {
      c.close?.();
      server.close();
    }
    // grpc-js writes what is left of the deadline when the call goes out: a few ms less.
    const ms = (v: string | undefined) =>
      v === undefined ? undefined : Math.round(Number(/^(\d+)m$/.exec(v)?.[1] ?? NaN) / 1000) * 1000;
    expect(Object.fromEntries([...seen].map(([k, v]) => [k, ms(v)]))).toEqual({
      ListContainers: 45_000,
      ListPodSandbox: 45_000,
      RunPodSandbox: 90_000,
      StopContainer: 75_000,
      ContainerStatus: 45_000,
      ExecSync: undefined,
      PullImage: undefined,
      ImageStatus: 45_000,
    });
  });

  it('refuses a response larger than the receive limit', async () => {
    const path = socketPath();
    await serve(path, {
      execSync: async () => ({ stdout: Buffer.alloc(64 * 1024, 'a'), stderr: Buffer.alloc(0), exit_code: 0 }),
    });
    const ch = unaryChannel(`unix://${path}`, { maxReceiveBytes: 1024 });
    try {
      const e = (await errorOf(
        ch.call(criMethods('RuntimeService').ExecSync as never, { container_id: 'a', cmd: ['x'] }, 5000),
      )) as unknown as {
        code: number;
      };
      expect(e.code).toBe(8);
    } finally {
      ch.close();
    }
  });

  it('answers Unavailable while the runtime is not there, and reconnects when it comes back or restarts', async () => {
    const path = socketPath();
    const c = createCriClient(path);
    const version = (tag: string) => async (v: string) => ({
      version: v,
      runtime_name: tag,
      runtime_version: '1',
      runtime_api_version: 'v1',
    });
    try {
      expect((await errorOf(c.runtime.version('x'))).code).toBe('Unavailable');
      // Calls fail fast while it is away; the channel connects again within its reconnect back-off (≤ 2 s).
      const first = await serve(path, { version: version('first') });
      await until(async () => (await c.runtime.version('x')).runtime_name === 'first', 5000, 'connected');
      first.forceShutdown();
      rmSync(path, { force: true });
      const down = await errorOf(c.runtime.version('x'));
      expect(down.code).toBe('Unavailable');
      await serve(path, { version: version('second') });
      await until(async () => (await c.runtime.version('x')).runtime_name === 'second', 5000, 'connected again');
    } finally {
      c.close?.();
    }
  });

  it('parses the endpoint forms kubelets accept', () => {
    expect(grpcTarget('unix:///run/containerd/containerd.sock')).toBe('unix:///run/containerd/containerd.sock');
    expect(grpcTarget('/run/x.sock')).toBe('unix:///run/x.sock');
    expect(grpcTarget('unix:/run/x.sock')).toBe('unix:///run/x.sock');
    expect(grpcTarget('127.0.0.1:5000')).toBe('127.0.0.1:5000');
    expect(grpcTarget('dns:///[::1]:5000')).toBe('dns:///[::1]:5000');
    expect(() => grpcTarget('nonsense')).toThrow(/unsupported/);
  });
});

describe('the daemon CRI server (serveCri) under a grpc-js client', () => {
  it('answers unary calls, maps errors to gRPC statuses with their details, and refuses streaming and unknown methods', async () => {
    const path = socketPath();
    const server = await serveCri(
      `unix://${path}`,
      fakeRuntime({
        version: async (v) => ({ version: v, runtime_name: 'proc', runtime_version: '1', runtime_api_version: 'v1' }),
        containerStatus: async (id) => {
          throw new KubeletError('NotFound', `container ${id} not found`);
        },
        listContainers: async () =>
          [
            {
              id: 'c1',
              pod_sandbox_id: 's1',
              state: 'CONTAINER_RUNNING',
              created_at: 1_700_000_000_000_000_000,
              labels: { a: 'b' },
            },
          ] as never,
        status: async () => {
          throw new Error('boom');
        },
      }),
      noImages,
    );
    const Client = grpcJs.makeClientConstructor(
      criMethods('RuntimeService') as grpcJs.ServiceDefinition,
      'RuntimeService',
    );
    const client = new Client(`unix://${path}`, grpcJs.credentials.createInsecure()) as unknown as Record<
      string,
      (req: object, cb: (err: grpcJs.ServiceError | null, res: any) => void) => void
    > &
      grpcJs.Client;
    const call = (method: string, req: object) =>
      new Promise<{ err: grpcJs.ServiceError | null; res: any }>((resolve) =>
        client[method].call(client, req, (err, res) => resolve({ err, res })),
      );
    try {
      expect((await call('Version', { version: '0.1.0' })).res).toMatchObject({
        version: '0.1.0',
        runtime_name: 'proc',
      });
      const listed = (await call('ListContainers', {})).res.containers;
      expect(listed).toMatchObject([{ id: 'c1', state: 'CONTAINER_RUNNING', labels: { a: 'b' } }]);
      const nf = (await call('ContainerStatus', { container_id: 'abc' })).err;
      expect([nf?.code, nf?.details]).toEqual([grpcJs.status.NOT_FOUND, 'container abc not found']);
      const unknown = (await call('Status', {})).err;
      expect([unknown?.code, unknown?.details]).toEqual([grpcJs.status.UNKNOWN, 'boom']);
      const notFaked = (await call('RemoveContainer', { container_id: 'x' })).err;
      expect(notFaked?.code).toBe(grpcJs.status.UNIMPLEMENTED);
      const streamErr = await new Promise<grpcJs.ServiceError>((resolve) => {
        const st = (
          client as unknown as Record<string, (req: object) => grpcJs.ClientReadableStream<unknown>>
        ).GetContainerEvents.call(client, {});
        st.on('error', resolve);
        st.on('data', () => {});
      });
      expect([streamErr.code, streamErr.details]).toEqual([
        grpcJs.status.UNIMPLEMENTED,
        'GetContainerEvents is not implemented',
      ]);
    } finally {
      client.close();
      await server.close();
    }
  });
});
