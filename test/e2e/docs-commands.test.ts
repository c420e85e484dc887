/**
 * Every command the README and the install guide show (their ```sh blocks) is run here or named
 * with the test that runs it: the quick start's `curl` lines against the kubelet as `npm start`
 * starts it (examples/kubelet-config.yaml, state under .tmp), the install lines by the release
 * test (an install into a prefix, `systemd-analyze verify` on the unit as it would be copied).
 * A command added to those documents without either fails here.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { httpGet, repoRoot, until } from './helpers.js';

/** The shell commands of a document's ```sh blocks: continuation lines joined, comments and blank lines left out. */
export function documentedCommands(markdown: string): string[] {
  const out: string[] = [];
  for (const [, block] of markdown.matchAll(/```sh\n([\s\S]*?)```/g)) {
    const joined = block.replace(/\\\n\s*/g, '');
    for (const line of joined.split('\n')) {
      const command = line.replace(/\s+#\s.*$/, '').trim();
      if (command && !command.startsWith('#')) out.push(command);
    }
  }
  return out;
}

/** Commands another test runs (or, for the node's system files, verifies), by pattern. */
const COVERED_ELSEWHERE: [RegExp, string][] = [
  [/^npm ci && npm test$/, '.ci/run (CI runs it on a clean clone)'],
  [/^npm ci && npm pack$/, 'test/e2e/release.test.ts (npm pack)'],
  [
    /^npm install -g --omit=dev \.\/tskubelet-[\d.]+\.tgz$/,
    'test/e2e/release.test.ts (an install into a prefix, no toolchain)',
  ],
  [/^tskubelet --version(=raw)?$/, 'test/e2e/release.test.ts (the installed command)'],
  [/^cp packaging\/systemd\/.+ \/etc\/systemd\/system\/.+$/, 'test/e2e/release.test.ts (systemd-analyze verify)'],
  [/^mkdir -p \/etc\/systemd\/system\/kubelet\.service\.d$/, 'test/e2e/release.test.ts (systemd-analyze verify)'],
  [/^systemctl daemon-reload && systemctl enable --now kubelet$/, 'test/e2e/release.test.ts (systemd-analyze verify)'],
  [/^npm ci && npm run deb$/, 'test/e2e/deb.test.ts (the package built from npm pack)'],
  [/^apt install \.\/tskubelet_[\d.]+_\w+\.deb$/, 'test/e2e/deb.test.ts (dpkg swaps the kubelet package out)'],
  [/^apt install kubelet$/, 'test/e2e/deb.test.ts (the kubelet package back in)'],
  [/^systemctl restart kubelet$/, 'test/integration/containerd-swap.test.ts (a new kubelet keeps the running pods)'],
];
/** The command this test runs itself: the quick start. */
const RUN_HERE = [/^npm ci && npm start$/, /^curl /];

const commands = ['README.md', 'docs/install.md'].flatMap((file) =>
  documentedCommands(readFileSync(join(repoRoot, file), 'utf8')).map((command) => ({ file, command })),
);

let kubelet: ChildProcess | undefined;
let output = '';

beforeAll(async () => {
  // `npm start`: the build is there (npm test built it); the start script's command itself.
  const start = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { scripts: { start: string } })
    .scripts.start;
  const [bin, ...args] = start.split(' ');
  kubelet = spawn(join(repoRoot, bin), args, { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] });
  kubelet.stdout!.on('data', (d) => (output += d));
  kubelet.stderr!.on('data', (d) => (output += d));
  await until(async () => (await httpGet('http://127.0.0.1:10248/healthz')).status === 200, 20_000, 'healthz');
  await until(
    async () => {
      const items = (
        JSON.parse((await httpGet('http://127.0.0.1:10255/pods')).body) as {
          items: { metadata: { name: string }; status?: { phase?: string } }[];
        }
      ).items;
      return items.some((p) => p.metadata.name.startsWith('logger-') && p.status?.phase === 'Running');
    },
    30_000,
    'the example pods Running',
  );
}, 60_000);

afterAll(async () => {
  if (kubelet && kubelet.exitCode === null) {
    kubelet.kill('SIGTERM');
    await new Promise((r) => kubelet!.once('exit', r));
  }
  for (const d of ['.tmp/root', '.tmp/containers', '.tmp/pods'])
    rmSync(join(repoRoot, d), { recursive: true, force: true });
});

describe('the documented commands', () => {
  it('are each run here or by a named test', () => {
    expect(commands.length).toBeGreaterThan(5);
    const orphans = commands.filter(
      ({ command }) => !RUN_HERE.some((r) => r.test(command)) && !COVERED_ELSEWHERE.some(([r]) => r.test(command)),
    );
    expect(orphans).toEqual([]);
  });

  it('the quick start’s curl lines answer against the kubelet npm start runs', () => {
    const curls = commands.filter(({ command }) => command.startsWith('curl '));
    expect(curls.length).toBeGreaterThanOrEqual(3);
    for (const { file, command } of curls) {
      const answer = execFileSync('sh', ['-c', command], { cwd: repoRoot, encoding: 'utf8', timeout: 10_000 });
      // Each answers what the guide says it does: the pods, ok, the container's log lines.
      expect(answer, `${file}: ${command}\n${output.slice(-2000)}`).toMatch(/"kind":"PodList"|^ok$|tick \d+/m);
    }
  });
});
