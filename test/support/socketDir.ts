// Where a test's shared workers listen. A unix socket's path has room for about 100 bytes and a
// worker's name takes up to 42 of them (more where isolating variables such as a proxy are set), so a
// directory inside the checkout leaves too little wherever the checkout lies deep (CI's does): sockets
// go to a short private directory of the system's, removed with removeSocketDirs().
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

const made: string[] = [];

/** A new private directory with a short path; `label` (a few letters) says which test made it. */
export function socketDir(label: string): string {
  const base = os.tmpdir().length <= 24 ? os.tmpdir() : '/tmp';
  const dir = fs.mkdtempSync(path.join(base, `dl-${label}-`));
  made.push(dir);
  return dir;
}

export function removeSocketDirs(): void {
  for (const dir of made.splice(0)) fs.rmSync(dir, { recursive: true, force: true });
}
