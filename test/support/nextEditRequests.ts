// A fixed next-edit request for the golden prompt tests (shared by the format and tokenizer tests).
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
