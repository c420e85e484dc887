import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Removes the cgroups the run leaves (test/global-cgroups.ts).
    globalSetup: ['test/global-cgroups.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    fileParallelism: true,
    // Three files at a time on CI's two cores (vitest's default there is one): most of the suite's time is
    // end-to-end files waiting on kubelets, containerd and timers, not computing; each fixture has its own
    // directories, ports and cgroup root, so files do not share state. The suite takes ~8.5 min so, ~12.5 with two.
    maxWorkers: 3,
  },
});
