// The platforms Draftline is packaged for: each VS Code target, the node-llama-cpp prebuilt binary
// packages it carries, and which GPU backend each of them runs. One table for scripts/package.mjs
// (what goes into a .vsix) and test/integration/packages.test.ts (what must be in it).
//
// What node-llama-cpp 3.21.1 publishes (npm view @node-llama-cpp/<name>@3.21.1): a CPU binary for every
// target below; Vulkan for linux-x64 and win-x64 only (no linux-arm64-vulkan, win-arm64-vulkan or
// mac-x64 GPU package exists); CUDA for linux-x64 and win-x64 (opt-in: 181 MB; the optional cuda-ext package, 357 MB more, is left
// out as before); on
// macOS arm64 the only binary is Metal (node-llama-cpp imports it for gpu "metal" only: there is no
// CPU-only mac-arm64 package, so draftline.gpu "cpu" runs it with no layers on the GPU).

/**
 * VS Code target -> Node's os/cpu there (npm's os/cpu fields), node-llama-cpp's platform and arch (its
 * getPlatform()), its CPU binary package and the GPU binary packages published for it.
 */
export const TARGETS = {
  'linux-x64': {
    nodePlatform: 'linux',
    nodeArch: 'x64',
    platform: 'linux',
    arch: 'x64',
    cpuBinary: 'linux-x64',
    gpu: { vulkan: ['linux-x64-vulkan'], cuda: ['linux-x64-cuda'] },
    defaultGpu: 'vulkan',
  },
  'linux-arm64': { nodePlatform: 'linux', nodeArch: 'arm64', platform: 'linux', arch: 'arm64', cpuBinary: 'linux-arm64', gpu: {}, defaultGpu: 'none' },
  'win32-x64': { nodePlatform: 'win32', nodeArch: 'x64', platform: 'win', arch: 'x64', cpuBinary: 'win-x64', gpu: { vulkan: ['win-x64-vulkan'], cuda: ['win-x64-cuda'] }, defaultGpu: 'vulkan' },
  'win32-arm64': { nodePlatform: 'win32', nodeArch: 'arm64', platform: 'win', arch: 'arm64', cpuBinary: 'win-arm64', gpu: {}, defaultGpu: 'none' },
  // The Metal binary is mac-arm64's only one: it is the "CPU" binary as well (no layers on the GPU).
  'darwin-arm64': { nodePlatform: 'darwin', nodeArch: 'arm64', platform: 'mac', arch: 'arm64', cpuBinary: 'mac-arm64-metal', builtInGpu: 'metal', gpu: {}, defaultGpu: 'none' },
  'darwin-x64': { nodePlatform: 'darwin', nodeArch: 'x64', platform: 'mac', arch: 'x64', cpuBinary: 'mac-x64', gpu: {}, defaultGpu: 'none' },
};

/** What `npm run package -- --target all` builds: every target, each with its default GPU binary. */
export const ALL_TARGETS = Object.keys(TARGETS);

/**
 * The binary packages a target's .vsix carries for a `--gpu` choice ('default': the target's default),
 * or an error message when node-llama-cpp publishes no such binary for it.
 */
export function binariesFor(target, gpu = 'default') {
  const t = TARGETS[target];
  if (!t) return { error: `unknown target ${target}; one of ${ALL_TARGETS.join(', ')} (or all)` };
  const chosen = gpu === 'default' ? t.defaultGpu : gpu;
  if (chosen === 'none') return { gpu: t.builtInGpu ?? 'none', packages: [t.cpuBinary] };
  const extra = t.gpu[chosen];
  if (!extra) {
    const offered = Object.keys(t.gpu);
    return {
      error: `--gpu ${gpu}: node-llama-cpp publishes no such binary for ${target} (${offered.length ? `one of ${offered.join(', ')} or none` : `only none${t.builtInGpu ? `: its one binary is ${t.builtInGpu} already` : ''}`})`,
    };
  }
  return { gpu: chosen, packages: [t.cpuBinary, ...extra] };
}

/** The file name of a target's package. */
export const vsixName = (pkg, target) => `${pkg.name}-${target}-${pkg.version}.vsix`;
