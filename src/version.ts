/** tskubelet's version and the Kubernetes version whose kubelet it stands in for. */
export const TSKUBELET_VERSION = '0.1.0';
export const KUBERNETES_VERSION = 'v1.36.2';

/**
 * What `--version` prints, as upstream's version flag: `Kubernetes v1.x.y` (what scripts parse),
 * and with `--version=raw` the build's details in the shape of Go's version.Info, tskubelet's own
 * version in it. Pure.
 */
export function versionText(
  mode: true | 'raw',
  runtime = process.version,
  platform = `${process.platform}/${process.arch === 'x64' ? 'amd64' : process.arch}`,
): string {
  if (mode !== 'raw') return `Kubernetes ${KUBERNETES_VERSION}`;
  const [major, minor] = KUBERNETES_VERSION.slice(1).split('.');
  const fields = {
    Major: major,
    Minor: minor,
    GitVersion: KUBERNETES_VERSION,
    GitCommit: '',
    GitTreeState: '',
    BuildDate: '',
    GoVersion: `node ${runtime}`,
    Compiler: `tskubelet ${TSKUBELET_VERSION}`,
    Platform: platform,
  };
  return `version.Info{${Object.entries(fields)
    .map(([k, v]) => `${k}:${JSON.stringify(v)}`)
    .join(', ')}}`;
}
