// An InferenceSession queues nothing (the worker's scheduler starts one generation at a time, and a
// second one at once throws). A benchmark that drives a CompletionEngine on a session directly (its
// prefetch may ask while a completion winds down) takes turns here, as the engine's requests did
// when the session chained them.

/** `run` one call at a time: each waits for the previous one to settle (whatever its outcome). */
export function oneAtATime(): <T>(run: () => Promise<T>) => Promise<T> {
  let previous: Promise<unknown> = Promise.resolve();
  return <T>(run: () => Promise<T>) => {
    const next = previous.then(run);
    previous = next.catch(() => undefined);
    return next;
  };
}
