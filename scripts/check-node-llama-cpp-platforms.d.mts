// Types of check-node-llama-cpp-platforms.mjs (plain JavaScript, so that it runs with node alone) for its unit test.
export interface PlatformPackageRow {
  name: string;
  /** The version node-llama-cpp declares it at (its own). */
  version: string;
  /** Whether npm has it at exactly that version. */
  published: boolean;
  /** The newest version npm has of it, null when none. */
  newest: string | null;
}
export interface PlatformCheck {
  ok: boolean;
  rows: PlatformPackageRow[];
}
export function checkPlatformPackages(declared: Record<string, string>, publishedVersions: (name: string) => Promise<string[] | null>): Promise<PlatformCheck>;
export function describeCheck(version: string, result: PlatformCheck): string;
