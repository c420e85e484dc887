/** kubernetes_build_info's labels for tskubelet. */
import { KUBERNETES_VERSION } from '../../version.js';

/**
 * kubernetes_build_info's labels: the Kubernetes version tskubelet stands in for; no Go, so no commit, build date or Go
 * version.
 */
export function buildInfo(): Record<
  | 'major'
  | 'minor'
  | 'git_version'
  | 'git_commit'
  | 'git_tree_state'
  | 'build_date'
  | 'go_version'
  | 'compiler'
  | 'platform',
  string
> {
  const [major = '', minor = ''] = KUBERNETES_VERSION.replace(/^v/, '').split('.');
  const arch = ({ x64: 'amd64', ia32: '386' } as Record<string, string>)[process.arch] ?? process.arch;
  return {
    major,
    minor,
    git_version: KUBERNETES_VERSION,
    git_commit: '',
    git_tree_state: '',
    build_date: '',
    go_version: '',
    compiler: 'tskubelet',
    platform: `${process.platform}/${arch}`,
  };
}
