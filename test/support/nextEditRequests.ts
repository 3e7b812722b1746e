// Fixed next-edit requests: the golden prompt tests' (the format and tokenizer tests), and the rename
// in area() that the worker and server tests ask about.
import { unifiedDiff } from '../../src/nextEdit/editHistory';
import type { NextEditRequest } from '../../src/nextEdit/types';

// The example of Sweep's model card (run_model.py): the user made greet() take a name, then imported
// get_time_of_day; the model should use it.
export const V1 = 'def greet():\n    print("Hello!")\n\ngreet("Alice")\n';
export const V2 = 'def greet(name):\n    print(f"Hello, {name}!")\n\ngreet("Alice")\n';
export const V3 = `from utils import get_time_of_day\n\n${V2}`;

export const GREET_REQUEST: NextEditRequest = {
  path: 'greet.py',
  text: V3,
  cursorOffset: V3.indexOf('\n'),
  events: [
    { path: 'greet.py', diff: unifiedDiff('greet.py', V1, V2)! },
    { path: 'greet.py', diff: unifiedDiff('greet.py', V2, V3)! },
  ],
  mode: 'plain',
};

/** area() just after the user renamed its `x` to `w`: the next edit renames `width` on the line below. */
export const AREA = 'export function area(width: number, height: number): number {\n  const w = width;\n  return width * height;\n}\n';

/** A request at that rename in src/area.ts, whose text is `text` (AREA, or AREA with more after it). */
export function areaRequest(over: Partial<NextEditRequest> = {}, text = AREA): NextEditRequest {
  return {
    path: 'src/area.ts',
    languageId: 'typescript',
    text,
    cursorOffset: text.indexOf('const w') + 7,
    events: [{ path: 'src/area.ts', diff: '--- a/src/area.ts\n+++ b/src/area.ts\n@@ -2,1 +2,1 @@\n-  const x = width;\n+  const w = width;\n' }],
    mode: 'plain',
    ...over,
  };
}
