// Reads settings against their declarations in package.json (contributes.configuration), so the
// bounds live in one place: out-of-range or mistyped values are clamped or replaced by the default
// with a message instead of reaching the worker (a workspace's `"draftline.threads": 64` would leave
// a 2-core machine without completions for minutes). Plain TypeScript: the VS Code layer passes its
// WorkspaceConfiguration in, tests pass a plain object.

/** One setting's declaration in package.json (the parts read here). */
export interface SettingDeclaration {
  type?: string | string[];
  default?: unknown;
  minimum?: number;
  maximum?: number;
  enum?: readonly unknown[];
  scope?: string;
}

/** What is set for a key, where (the shape of vscode.WorkspaceConfiguration.inspect). */
export interface SettingValues<T = unknown> {
  defaultValue?: T;
  globalValue?: T;
  workspaceValue?: T;
  workspaceFolderValue?: T;
}

/** The slice of vscode.WorkspaceConfiguration read here. */
export interface SettingsSource {
  /** The value in effect, as the editor computes it (workspace over user; Restricted Mode applied). */
  get<T>(key: string): T | undefined;
  inspect<T>(key: string): SettingValues<T> | undefined;
}

/**
 * Scopes VS Code itself does not apply from a workspace. Draftline reads these keys from user and
 * machine settings only as well: they cost resources or reach the network, and a cloned
 * repository's `.vscode/settings.json` must not choose them.
 */
export const USER_ONLY_SCOPES: ReadonlySet<string> = new Set(['machine', 'application', 'machine-overridable']);

export class SettingsReader {
  /**
   * `declarations` are package.json's contributes.configuration.properties (keys with the section
   * prefix); `report` gets one sentence per problem found (the caller logs and notifies).
   */
  constructor(
    private readonly section: string,
    private readonly declarations: Readonly<Record<string, SettingDeclaration>>,
    private readonly source: SettingsSource,
    private readonly report: (message: string) => void = () => undefined,
  ) {}

  /** The value in effect, but never a workspace's for a user-only setting; the declared default when unset. */
  value<T>(key: string): T {
    const declaration = this.declaration(key);
    if (USER_ONLY_SCOPES.has(declaration.scope ?? '')) {
      const values = this.source.inspect<T>(key) ?? {};
      const fromWorkspace = values.workspaceFolderValue ?? values.workspaceValue;
      if (fromWorkspace !== undefined && !sameValue(fromWorkspace, values.globalValue)) {
        this.report(`${this.name(key)} is set in this workspace's settings, which Draftline ignores for this setting (it costs resources or reaches the network): set it in your user settings.`);
      }
      return (values.globalValue ?? values.defaultValue ?? declaration.default) as T;
    }
    return (this.source.get<T>(key) ?? declaration.default) as T;
  }

  /** A number within its declared minimum and maximum (whole for "integer" settings). */
  number(key: string): number {
    return this.numberFrom(key, this.value<unknown>(key));
  }

  private numberFrom(key: string, raw: unknown): number {
    const fallback = this.declaration(key).default as number;
    if (isFiniteNumber(raw)) return this.bounded(key, raw);
    this.report(`${this.name(key)} is ${JSON.stringify(raw)}, not a number: using the default ${fallback}.`);
    return fallback;
  }

  /** A number within bounds, or one of the declared string values (e.g. gpuLayers: 12 or "auto"). */
  numberOrKeyword<K extends string>(key: string, keywords: readonly K[]): number | K {
    const raw = this.value<unknown>(key);
    if (typeof raw === 'string' && (keywords as readonly string[]).includes(raw)) return raw as K;
    if (isFiniteNumber(raw)) return this.bounded(key, raw);
    const fallback = this.declaration(key).default as number | K;
    this.report(`${this.name(key)} is ${JSON.stringify(raw)}: expected a number or ${keywords.map((k) => `"${k}"`).join(', ')}; using ${JSON.stringify(fallback)}.`);
    return fallback;
  }

  /** One of the declared enum values. */
  choice<T extends string>(key: string): T {
    const declaration = this.declaration(key);
    const raw = this.value<unknown>(key);
    if (!declaration.enum || declaration.enum.includes(raw)) return raw as T;
    const fallback = declaration.default as T;
    this.report(`${this.name(key)} is ${JSON.stringify(raw)}: expected one of ${declaration.enum.join(', ')}; using "${fallback}".`);
    return fallback;
  }

  /**
   * Inference threads: 0 means the default (chosen by the worker); more than the machine's cores
   * only makes the threads wait on each other (and starve the editor), so they are capped there.
   */
  threads(key: string, cores: number): number {
    const raw = this.value<unknown>(key);
    if (isFiniteNumber(raw) && raw > cores) {
      this.report(`${this.name(key)} is ${raw}, more than this machine's ${cores} cores: using ${cores}.`);
      return cores;
    }
    return this.numberFrom(key, raw);
  }

  private bounded(key: string, raw: number): number {
    const declaration = this.declaration(key);
    let value = raw;
    const types = ([] as string[]).concat(declaration.type ?? []);
    if (types.includes('integer') && !Number.isInteger(value)) value = Math.round(value);
    const { minimum = -Infinity, maximum = Infinity } = declaration;
    if (value < minimum) value = minimum;
    if (value > maximum) value = maximum;
    if (value !== raw) {
      const why = raw < minimum ? `below its minimum ${minimum}` : raw > maximum ? `above its maximum ${maximum}` : 'not a whole number';
      this.report(`${this.name(key)} is ${raw}, ${why}: using ${value}.`);
    }
    return value;
  }

  private declaration(key: string): SettingDeclaration {
    const declaration = this.declarations[this.name(key)];
    if (!declaration) throw new Error(`${this.name(key)} is not declared in package.json`);
    return declaration;
  }

  private name(key: string): string {
    return `${this.section}.${key}`;
  }
}

function isFiniteNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

function sameValue(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}
