import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Removes the cgroups the run leaves (test/global-cgroups.ts).
    globalSetup: ['test/global-cgroups.ts'],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    fileParallelism: true,
    // Two files at a time even on CI's two cores (vitest's default there is one): most of the suite's time is
    // end-to-end files waiting on kubelets, containerd and timers, not computing; each fixture has its own
    // directories, ports and cgroup root, so files do not share state.
    maxWorkers: 2,
  },
});
