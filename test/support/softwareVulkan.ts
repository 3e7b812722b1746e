// What a test on node-llama-cpp's Vulkan backend over Mesa's llvmpipe (a software Vulkan device) needs,
// for every file that runs one: the device made visible, fusion off, and why Vulkan cannot run here.
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { describe, it } from 'node:test';

/**
 * Sets up the environment (inherited by the workers a test starts) and returns why Vulkan cannot run
 * here, or null. With DRAFTLINE_REQUIRE_VULKAN=1 (npm test sets it) a missing device is a failing test.
 */
export function useSoftwareVulkan(): string | null {
  // ggml skips CPU-type Vulkan devices unless GGML_VK_VISIBLE_DEVICES names them.
  process.env.GGML_VK_VISIBLE_DEVICES = '0';
  // Mesa 22.3.6's lavapipe (Debian 12) crashes in its own queue thread on ggml's fused Vulkan kernels
  // (SIGSEGV in libvulkan_lvp.so in 2-5 of 6 runs of the drift probe here; 0 of 19 with fusion off).
  // A driver bug of the software device, not of Draftline: fusion off keeps the GPU path testable.
  process.env.GGML_VK_DISABLE_FUSION = '1';
  const missing = vulkanMissing();
  if (missing && process.env.DRAFTLINE_REQUIRE_VULKAN === '1') {
    describe('Vulkan on a software GPU', () => it('is installed (DRAFTLINE_REQUIRE_VULKAN=1)', () => assert.fail(missing)));
  }
  return missing;
}

/** Why Vulkan cannot run here, or null: Mesa's llvmpipe driver and the Vulkan loader must be installed. */
function vulkanMissing(): string | null {
  const icds = ['/usr/share/vulkan/icd.d', '/etc/vulkan/icd.d'].flatMap((d) => (fs.existsSync(d) ? fs.readdirSync(d).filter((f) => f.startsWith('lvp_icd')) : []));
  if (icds.length === 0) return 'no llvmpipe Vulkan driver (Debian: apt-get install mesa-vulkan-drivers; scripts/setup-e2e.sh)';
  const loader = ['/usr/lib/x86_64-linux-gnu/libvulkan.so.1', '/usr/lib/aarch64-linux-gnu/libvulkan.so.1', '/usr/lib/libvulkan.so.1'].some((f) => fs.existsSync(f));
  return loader ? null : 'no Vulkan loader (libvulkan1)';
}
