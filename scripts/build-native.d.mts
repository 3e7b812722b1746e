// Types of build-native.mjs (plain JavaScript, so that esbuild.mjs runs it with node alone) for the bench.
export const nativeAddonPath: string;
/** Builds dist/draftline-native.node when it is missing or stale; false where it is not built (not Linux). Throws why a build failed. */
export function buildNative(options?: { quiet?: boolean }): boolean;
export function buildNativeOrExplain(): boolean;
