/**
 * The public next-edit cases in ../shared/nes-cases/ (Zed's edit-prediction evals, Copilot's NES
 * recordings, the NEP paper's test set; see the README there for where each came from and its licence).
 * They are read from there at test and bench time and never copied into this repository.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import * as path from 'node:path';

export const NES_CASES_DIR = path.resolve(__dirname, '../..', 'shared', 'nes-cases');

export interface NesCase {
  id: string;
  /** Where it came from (repository:path@commit). */
  source: string;
  language: string;
  path: string;
  /** Edit history as unified diffs, oldest first. */
  events: string[];
  before: string;
  cursorOffset: number;
  /** before[regionStart, regionEnd) is the editable region. */
  regionStart: number;
  regionEnd: number;
  /** What the region should become. */
  expected: string;
  note?: string;
  /** Other region texts that are equally correct. */
  alternatives?: string[];
  /** Acceptable but not the intended edit (Copilot only). */
  alsoValid?: string[];
  /** Region texts graded wrong (Copilot only). */
  rejected?: string[];
  /** Leaving the region unchanged is graded acceptable (Copilot only). */
  noChangeAcceptable?: boolean;
  /** Indices of events that were accepted predictions (Zed only). */
  acceptedPredictionEvents?: number[];
  /** Where the code itself came from. */
  upstream?: unknown;
  /** What the expected edit was taken from (Copilot only). */
  expectedKind?: string;
  /** The file it was read from (added here). */
  file: string;
}

/** Whether the cases are there (a checkout without ../shared has none). */
export function nesCasesAvailable(dir = NES_CASES_DIR): boolean {
  return existsSync(dir) && readdirSync(dir).some((f) => f.endsWith('.json'));
}

/** Every case of every file, in file order. */
export function loadNesCases(dir = NES_CASES_DIR): NesCase[] {
  const files = readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort();
  return files.flatMap((file) => {
    const cases = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as Omit<NesCase, 'file'>[];
    if (!Array.isArray(cases)) throw new Error(`${file}: not an array of cases`);
    return cases.map((c) => ({ ...c, file }));
  });
}
