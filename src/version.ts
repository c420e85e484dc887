/** tskubelet's version and the Kubernetes version whose kubelet it stands in for. */
export const TSKUBELET_VERSION = '0.1.0';
export const KUBERNETES_VERSION = 'v1.32.0';
