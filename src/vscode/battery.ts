// Whether the machine runs on battery, as the platform reports it, without a dependency: the
// kernel's power-supply class on Linux, pmset on macOS, Win32_Battery on Windows. Whatever cannot be
// read counts as 'unknown', which callers treat as not on battery (a desktop has no battery to ask).
import { execFile } from 'node:child_process';
import * as fs from 'node:fs/promises';
import * as path from 'node:path';

export type PowerSource = 'battery' | 'ac' | 'unknown';

/** What the readers touch, injectable so that each platform's parsing is tested on every platform. */
export interface PowerProbe {
  platform: NodeJS.Platform;
  /** Names in a directory ([] when it cannot be read). */
  listDir(dir: string): Promise<string[]>;
  /** A small text file, trimmed (null when it cannot be read). */
  readText(file: string): Promise<string | null>;
  /** A command's stdout (null when it fails or takes too long). */
  run(command: string, args: string[]): Promise<string | null>;
}

const COMMAND_TIMEOUT_MS = 5000;

export const systemProbe: PowerProbe = {
  platform: process.platform,
  listDir: (dir) => fs.readdir(dir).catch(() => []),
  readText: (file) =>
    fs.readFile(file, 'utf8').then(
      (t) => t.trim(),
      () => null,
    ),
  run: (command, args) =>
    new Promise((resolve) => {
      execFile(command, args, { timeout: COMMAND_TIMEOUT_MS, windowsHide: true }, (error, stdout) => resolve(error ? null : String(stdout)));
    }),
};

const SYSFS = '/sys/class/power_supply';

/**
 * Linux: an adapter (Mains, or USB for USB-C power) that is online means AC. Otherwise a system
 * battery (not a device's, e.g. a mouse: scope "Device") that is discharging, or that is there
 * while every adapter is offline, means battery.
 */
async function linuxPowerSource(probe: PowerProbe): Promise<PowerSource> {
  let adapters = 0;
  let systemBattery = false;
  let discharging = false;
  for (const name of await probe.listDir(SYSFS)) {
    const read = (file: string) => probe.readText(path.posix.join(SYSFS, name, file));
    const type = await read('type');
    if (type === 'Mains' || type === 'USB') {
      const online = await read('online');
      if (online === null) continue;
      if (online === '1') return 'ac';
      adapters++;
    } else if (type === 'Battery') {
      if ((await read('scope')) === 'Device') continue;
      systemBattery = true;
      if ((await read('status')) === 'Discharging') discharging = true;
    }
  }
  if (discharging || (systemBattery && adapters > 0)) return 'battery';
  return systemBattery ? 'ac' : 'unknown';
}

/** macOS: `pmset -g batt` starts with "Now drawing from 'Battery Power'" or "'AC Power'". */
export function parsePmset(output: string): PowerSource {
  const source = /drawing from '([^']+)'/.exec(output)?.[1];
  if (source === 'Battery Power') return 'battery';
  if (source === 'AC Power' || source === 'UPS Power') return 'ac';
  return 'unknown';
}

/** Windows: Win32_Battery.BatteryStatus, 1 = discharging; no battery prints nothing. */
export function parseWin32BatteryStatus(output: string): PowerSource {
  const statuses = output
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => /^\d+$/.test(l))
    .map(Number);
  if (statuses.length === 0) return 'unknown';
  return statuses.includes(1) ? 'battery' : 'ac';
}

export async function readPowerSource(probe: PowerProbe = systemProbe): Promise<PowerSource> {
  try {
    switch (probe.platform) {
      case 'linux':
        return await linuxPowerSource(probe);
      case 'darwin': {
        const out = await probe.run('pmset', ['-g', 'batt']);
        return out === null ? 'unknown' : parsePmset(out);
      }
      case 'win32': {
        const out = await probe.run('powershell.exe', ['-NoProfile', '-NonInteractive', '-Command', '(Get-CimInstance -ClassName Win32_Battery).BatteryStatus']);
        return out === null ? 'unknown' : parseWin32BatteryStatus(out);
      }
      default:
        return 'unknown';
    }
  } catch {
    return 'unknown';
  }
}

/**
 * The power source, read at most once a minute (PowerShell takes a second to start): a prefetch asks
 * before each start, and a plug pulled a minute ago is soon enough to notice.
 */
export class PowerMonitor {
  private value: { source: PowerSource; at: number } | null = null;
  private reading: Promise<PowerSource> | null = null;

  constructor(
    private readonly probe: PowerProbe = systemProbe,
    private readonly maxAgeMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  async source(): Promise<PowerSource> {
    if (this.value && this.now() - this.value.at < this.maxAgeMs) return this.value.source;
    this.reading ??= readPowerSource(this.probe).then((source) => {
      this.value = { source, at: this.now() };
      this.reading = null;
      return source;
    });
    return this.reading;
  }

  async onBattery(): Promise<boolean> {
    return (await this.source()) === 'battery';
  }
}
