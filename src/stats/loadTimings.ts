import type { LoadTimings } from '../shared/backendInfo';

/** "headers 12 ms, binding 380 ms (waited), draft 60 ms, target 80 ms": where a model load's time went. */
export function describeLoadTimings(t: LoadTimings): string {
  const milestones = t.bindingAtMs !== undefined ? `; worker age: library ${t.libraryAtMs} ms, binding ${t.bindingAtMs} ms` : '';
  return `headers ${Math.round(t.inspectMs)} ms, binding ${Math.round(t.runtimeMs)} ms, draft ${Math.round(t.draftMs)} ms, target ${Math.round(t.targetMs)} ms${milestones}`;
}
