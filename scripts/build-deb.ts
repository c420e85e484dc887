/**
 * `npm run deb`: a Debian package of the release, in the place of the Go kubelet's package
 * (pkgs.k8s.io's `kubelet`): `/usr/bin/kubelet` and `kubelet.service` come from it, so kubeadm's
 * drop-in (shipped by the `kubeadm` package, `ExecStart=/usr/bin/kubelet $KUBELET_KUBECONFIG_ARGS
 * …`) runs tskubelet with the files it already has. It conflicts with, replaces and provides
 * `kubelet`: installing it swaps the Go kubelet's package out, and removing it lets that back in.
 *
 * What is packed is what `npm pack` gives, installed without devDependencies as an operator would
 * install it (docs/install.md), under `/usr/lib/tskubelet`. node-pty, an optional native addon,
 * is in when the building machine could build it: the package is then for that architecture, and the parts of
 * node-pty for other systems (its Windows and macOS binaries) are left out.
 *
 *   node --import tsx scripts/build-deb.ts [--tarball tskubelet-x.y.z.tgz] [--out dir]
 */
import { execFile, execFileSync } from 'node:child_process';
import {
  chmodSync,
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { KUBERNETES_VERSION } from '../src/version.js';

// The slow steps (npm, dpkg-deb) run as children the caller's event loop does not wait on: a test worker blocked for
// a minute misses its runner's messages (vitest's worker RPC times out after 60 s, and the run fails with no test
// failing).
const execFileAsync = promisify(execFile);

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Where the package puts things (Debian's merged /usr). */
export const DEB_PATHS = {
  install: '/usr/lib/tskubelet',
  kubelet: '/usr/bin/kubelet',
  tskubelet: '/usr/bin/tskubelet',
  unit: '/usr/lib/systemd/system/kubelet.service',
  copyright: '/usr/share/doc/tskubelet/copyright',
} as const;

/** Debian policy's copyright file: the license the package.json names, in machine-readable form. Pure. */
export function debCopyright(license: string): string {
  return [
    'Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/',
    'Upstream-Name: tskubelet',
    '',
    'Files: *',
    'Copyright: tskubelet maintainers',
    `License: ${license}`,
    ...(license === 'Apache-2.0'
      ? [' On Debian systems the full text of the Apache License 2.0 is in /usr/share/common-licenses/Apache-2.0.']
      : []),
    ' The packages under /usr/lib/tskubelet/node_modules keep their own license files.',
    '',
  ].join('\n');
}

/** What the control file says. */
export interface DebMetadata {
  version: string;
  architecture: string;
  installedSizeKiB: number;
  description: string;
}

/** The package's control file. Pure. */
export function debControl(m: DebMetadata): string {
  const kubernetes = KUBERNETES_VERSION.slice(1);
  return [
    'Package: tskubelet',
    `Version: ${m.version}`,
    `Architecture: ${m.architecture}`,
    'Maintainer: tskubelet maintainers <tskubelet@users.noreply.github.com>',
    `Installed-Size: ${m.installedSizeKiB}`,
    // util-linux: flock(1) holds --lock-file; mount: volumes. Node.js from any source that packages it as nodejs.
    'Depends: nodejs (>= 20), util-linux, mount',
    'Recommends: containerd | cri-o',
    `Provides: kubelet (= ${kubernetes})`,
    'Conflicts: kubelet',
    'Replaces: kubelet',
    'Section: admin',
    'Priority: optional',
    `Description: ${m.description}`,
    ` Stands in for the kubelet of Kubernetes ${KUBERNETES_VERSION}: /usr/bin/kubelet and kubelet.service,`,
    " run by kubeadm's drop-in with the Go kubelet's flags and configuration file.",
    '',
  ].join('\n');
}

/**
 * kubelet.service from the unit in packaging/systemd: the same settings, the command where the package puts it. Pure.
 */
export function debUnit(unit: string): string {
  const paths = unit
    .replaceAll('/usr/local/lib/node_modules/tskubelet', DEB_PATHS.install)
    .replaceAll('/usr/local/bin/tskubelet', DEB_PATHS.kubelet);
  return `# Installed by the tskubelet package as ${DEB_PATHS.unit}.\n${paths}`;
}

// Maintainer scripts: systemd is told of the unit (and a running kubelet restarted on an upgrade) unless dpkg works on
// another root (DPKG_ROOT), where there is no systemd of that system to tell.
const POSTINST = `#!/bin/sh
set -e
if [ -z "\${DPKG_ROOT:-}" ] && [ -d /run/systemd/system ]; then
  systemctl daemon-reload || true
  if [ "$1" = configure ] && [ -n "$2" ]; then
    systemctl try-restart kubelet.service || true
  fi
fi
`;
const POSTRM = `#!/bin/sh
set -e
if [ -z "\${DPKG_ROOT:-}" ] && [ -d /run/systemd/system ]; then
  systemctl daemon-reload || true
fi
`;

/**
 * What of an install serves only other systems (node-pty's Windows and macOS builds, ~58 MB, and the Windows
 * terminal sources it ships, ~4 MB): a Linux package leaves it out, with node-pty's prebuilt binary for Linux on
 * `arch` if it has one. `list` names the entries of a directory (none when it is absent). Pure.
 */
export function otherSystemsParts(
  installed: string,
  list: (dir: string) => string[],
  arch: string = process.arch,
): string[] {
  const nodePty = join(installed, 'node_modules', 'node-pty');
  const prebuilds = join(nodePty, 'prebuilds');
  return [
    ...list(prebuilds)
      .filter((build) => build !== `linux-${arch}`)
      .map((build) => join(prebuilds, build)),
    ...[join(nodePty, 'deps', 'winpty'), join(nodePty, 'third_party', 'conpty')].filter((path) =>
      list(dirname(path)).includes(basename(path)),
    ),
  ];
}

const readdirOrNone = (dir: string): string[] => (existsSync(dir) ? readdirSync(dir) : []);

/**
 * The release: `npm pack` of the checkout into `outDir`, without its prepack build (dist/ must be built, and packing
 * must not rebuild it under whatever else runs). The tarball's path and the files it holds.
 */
export async function packRelease(outDir: string): Promise<{ tarball: string; files: string[] }> {
  const { stdout } = await execFileAsync('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', outDir], {
    cwd: repoRoot,
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  const [packed] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
  return { tarball: join(outDir, packed.filename), files: packed.files.map((f) => f.path) };
}

/**
 * Builds the package from an `npm pack` tarball into `outDir`; returns its path. `optional: false` asks npm to leave
 * node-pty out (`--omit=optional`; npm 11 installs it all the same when it can build it).
 */
export async function buildDeb(o: { tarball: string; outDir: string; optional?: boolean }): Promise<string> {
  const work = mkdtempSync(join(tmpdir(), 'tsk-deb-'));
  try {
    const prefix = join(work, 'prefix');
    await execFileAsync(
      'npm',
      [
        'install',
        '-g',
        '--prefix',
        prefix,
        '--omit=dev',
        ...(o.optional === false ? ['--omit=optional'] : []),
        '--no-audit',
        '--no-fund',
        '--prefer-offline',
        o.tarball,
      ],
      { maxBuffer: 64 << 20 },
    );
    const root = join(work, 'root');
    const installed = join(root, DEB_PATHS.install);
    mkdirSync(dirname(installed), { recursive: true });
    cpSync(join(prefix, 'lib', 'node_modules', 'tskubelet'), installed, { recursive: true, verbatimSymlinks: true });
    for (const part of otherSystemsParts(installed, readdirOrNone)) rmSync(part, { recursive: true, force: true });
    const meta = JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')) as {
      version: string;
      description: string;
      license: string;
    };
    mkdirSync(join(root, dirname(DEB_PATHS.copyright)), { recursive: true });
    writeFileSync(join(root, DEB_PATHS.copyright), debCopyright(meta.license));
    // Relative links: they hold under any root dpkg installs into.
    mkdirSync(join(root, 'usr', 'bin'), { recursive: true });
    for (const link of [DEB_PATHS.kubelet, DEB_PATHS.tskubelet])
      symlinkSync('../lib/tskubelet/bin/tskubelet.js', join(root, link));
    mkdirSync(join(root, dirname(DEB_PATHS.unit)), { recursive: true });
    writeFileSync(
      join(root, DEB_PATHS.unit),
      debUnit(readFileSync(join(installed, 'packaging', 'systemd', 'tskubelet.service'), 'utf8')),
    );
    const installedSizeKiB = Number(
      execFileSync('du', ['-sk', '--apparent-size', root], { encoding: 'utf8' }).split('\t')[0],
    );
    const architecture = execFileSync('dpkg', ['--print-architecture'], { encoding: 'utf8' }).trim();
    mkdirSync(join(root, 'DEBIAN'));
    writeFileSync(
      join(root, 'DEBIAN', 'control'),
      debControl({
        version: meta.version,
        architecture,
        installedSizeKiB,
        description: meta.description,
      }),
    );
    for (const [name, script] of [
      ['postinst', POSTINST],
      ['postrm', POSTRM],
    ]) {
      writeFileSync(join(root, 'DEBIAN', name), script);
      chmodSync(join(root, 'DEBIAN', name), 0o755);
    }
    mkdirSync(o.outDir, { recursive: true });
    const deb = join(o.outDir, `tskubelet_${meta.version}_${architecture}.deb`);
    await execFileAsync('dpkg-deb', ['--root-owner-group', '--build', root, deb], { maxBuffer: 64 << 20 });
    return deb;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const arg = (name: string) => {
    const i = process.argv.indexOf(name);
    return i > 0 ? process.argv[i + 1] : undefined;
  };
  const outDir = resolve(arg('--out') ?? repoRoot);
  const given = arg('--tarball');
  const tarball = given ? resolve(given) : (await packRelease(outDir)).tarball;
  process.stdout.write(`${await buildDeb({ tarball, outDir })}\n`);
}
