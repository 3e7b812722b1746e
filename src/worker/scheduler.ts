// The worker's scheduler: it alone decides what runs next on a loaded pair. Every request is a job
// whose kind gives its priority (PRIORITY: a real completion, then alternatives, then a prefetch, then
// a next edit, then the warm-up after a load) and its lane (LANE). One job runs at a time per lane
// on a pair: the completion lane (completions, alternatives, prefetches, the warm-up) and the
// next-edit lane. Each window's newest job of a lane waits in the lane's queue (a newer one from the
// same window supersedes it, waiting or running), and the next to run is the highest priority's,
// among equals the window that has waited longest (round robin). Jobs that give way (YIELDS: a
// prefetch, the warm-up) are stopped by any job that outranks them, and a prefetch is refused as
// `busy` while one that would stop it is pending. A job does not start while a job of another lane
// that outranks it and does not give way waits (a next edit waits for real completions).
//
// The two lanes run side by side and share the models through the context gate
// (inference/contextGate.ts), which every completion-lane generation takes in the session (so that
// disposing the session waits for one still waiting for the gate): a running next edit stops between
// two evaluations while a completion has the models, so another window's completion waits one decode step at most,
// and it resumes on its own KV sequence (`window N · next edit`) where it was. The window's next
// next-edit request (a keystroke) or its cancel supersedes it; nothing of another window's does.
// Each job decodes on its window's own KV sequence (InferenceSession's prompt-state owners), so
// taking turns costs no prompt re-evaluation. InferenceSession runs what it is given and queues
// nothing: it throws if two generations ever overlap on it.
import type { InferenceSession } from '../inference/inferenceSession';
import { noNextEdit } from '../nextEdit/noSuggestion';
import type { NextEditRequest, NextEditResult, TextReplacement } from '../nextEdit/types';
import type { AlternativesResult, CompletionRequest, LocalCompletionResult } from '../shared/completion';
import { emptySpeculationStats } from '../shared/generationStats';
import type { SpeculationSettings } from '../shared/settings';
import type { SpeculationPolicy } from '../speculation/policy';
import { PROTOCOL_VERSION, type WorkerMessage, type WorkerNotification } from './protocol';

/** What a job is; its priority, lane and whether it gives way follow from it. */
export type JobKind = 'completion' | 'alternatives' | 'prefetch' | 'nextEdit' | 'warmUp';
/** Who goes first: the lower number. */
export const PRIORITY: Readonly<Record<JobKind, number>> = { completion: 0, alternatives: 1, prefetch: 2, nextEdit: 3, warmUp: 4 };
/** Kinds that give way: a job that outranks one stops it (waiting or running); a prefetch is refused while such a job is pending. */
export const YIELDS: ReadonlySet<JobKind> = new Set<JobKind>(['prefetch', 'warmUp']);
export type Lane = 'completion' | 'nextEdit';
/** One job at a time per lane on a pair; a completion-lane generation holds the context gate while it runs. */
export const LANE: Readonly<Record<JobKind, Lane>> = { completion: 'completion', alternatives: 'completion', prefetch: 'completion', warmUp: 'completion', nextEdit: 'nextEdit' };
/** The order lanes are served in. */
const LANES: readonly Lane[] = ['completion', 'nextEdit'];

/** One lane of a pair: the newest waiting job of each window (oldest window first) and the one running. */
export interface LaneQueue {
  waiting: Map<Connection, Job>;
  running: Job | null;
}

/** Models loaded once for every client that asked for the same files with the same settings. */
export interface LoadedModels {
  key: string;
  session: InferenceSession | null;
  loading: Promise<InferenceSession> | null;
  users: Set<Connection>;
  lanes: Record<Lane, LaneQueue>;
}

export const emptyLanes = (): Record<Lane, LaneQueue> => ({ completion: { waiting: new Map(), running: null }, nextEdit: { waiting: new Map(), running: null } });

/** A request from a window (or the warm-up), from its arrival until its answer. */
export interface Job<R = unknown> {
  kind: JobKind;
  /** The window that asked; null for the warm-up. */
  connection: Connection | null;
  id: number;
  controller: AbortController;
  /** Its work on the session, started once when its turn comes; `signal` is its controller's. */
  run(session: InferenceSession, signal: AbortSignal): Promise<R>;
  /** What it answers when it never ran (superseded or cancelled while waiting). */
  notRun(): R;
  resolve(result: R): void;
  reject(error: Error): void;
}

/** One client: an extension host (a window). Its request ids and document keys are its own. */
export interface Connection {
  id: number;
  send(message: WorkerMessage): void;
  models: LoadedModels | null;
  /** Its documents' keys as the index holds them (scoped by the connection). */
  documents: Set<string>;
  /** Document notifications that came before its models were loaded. */
  pendingDocuments: WorkerNotification[];
  /**
   * This window's speculation settings (from its load and configure) and the adaptive policy that
   * learns from its completions: each request decodes with its own window's, whoever else shares
   * the models, and the policy figures in its results are this window's.
   */
  speculation: SpeculationSettings;
  policy: SpeculationPolicy;
  /**
   * The policy its next edits decode with: their own, because the next-edit model may be another file
   * (its verify cost another) and its copy proposals are learned apart from the completions' sources.
   */
  nextEditPolicy: SpeculationPolicy;
  /** Its job of each lane waiting or running, if any: a newer one from the same window supersedes it. */
  jobs: Record<Lane, Job | null>;
}

export const requestKey = (connection: Connection, id: number) => `${connection.id}:${id}`;
/** A window's prompt states are named `window N · task` (InferenceSession's owners). */
export const ownerPrefix = (connection: Connection) => `window ${connection.id} · `;

/** DRAFTLINE_WARM_UP=0 leaves it out (the startup benchmark measures the first completion both ways). */
const WARM_UP = process.env.DRAFTLINE_WARM_UP !== '0';

/** What a completion that never ran answers: nothing, stopped by a cancel (as a generation cut short at once is). */
function completionNotRun(): LocalCompletionResult {
  return {
    text: '',
    tokens: [],
    stats: {
      promptTokens: 0,
      reusedPromptTokens: 0,
      generatedTokens: 0,
      promptMs: 0,
      timeToFirstTokenMs: 0,
      totalMs: 0,
      stopReason: 'abort',
      speculation: emptySpeculationStats('plain'),
    },
  };
}

const notLoaded = () => Object.assign(new Error('no model is loaded'), { code: 'not_loaded' });

/** The worker's generation figures (diagnostics) and how many run now (indexing slices give way to them). */
export interface GenerationFigures {
  running: number;
  completed: number;
  maxConcurrent: number;
}

/** One per worker process: every decision about who runs next, and the requests a `cancel` can name. */
export class Scheduler {
  readonly generations: GenerationFigures = { running: 0, completed: 0, maxConcurrent: 0 };
  /** Jobs waiting or running, by connection-scoped request id (what a `cancel` names). */
  private readonly requests = new Map<string, AbortController>();
  /** End times (worker clock) of the latest generations, for generations.maxConcurrent. */
  private readonly recentGenerationEnds: number[] = [];

  constructor(
    /** Every loaded pair of the worker: a prefetch is refused while a real completion is pending on any. */
    private readonly loaded: () => Iterable<LoadedModels>,
    private readonly log: (level: 'info' | 'warn', message: string) => void,
  ) {}

  /** A `cancel` from a window: its request stops (a waiting one answers at once). */
  cancel(connection: Connection, id: number): void {
    this.requests.get(requestKey(connection, id))?.abort();
  }

  /** The window went away: every request of it stops. */
  cancelAll(connection: Connection): void {
    for (const [key, controller] of this.requests) if (key.startsWith(`${connection.id}:`)) controller.abort();
  }

  /**
   * A window's completion, alternatives (`alternatives`: how many) or prefetch
   * (`request.prefetch`). Throws `busy` at once for a prefetch while a job that would stop it is
   * pending: a prefetch never starts while a real request waits or runs, nor stops it.
   */
  enqueueCompletion(connection: Connection, entry: LoadedModels, id: number, request: CompletionRequest, alternatives?: number): Promise<LocalCompletionResult | AlternativesResult> {
    const kind: JobKind = alternatives !== undefined ? 'alternatives' : request.prefetch ? 'prefetch' : 'completion';
    this.admit(kind);
    // Each window decodes on its own KV sequence while the budget allows (alternatives and prefetches
    // too: they share the completion's prompt).
    const overrides = () => ({ speculation: connection.speculation, policy: connection.policy, owner: `${ownerPrefix(connection)}completion` });
    return this.enqueue<LocalCompletionResult | AlternativesResult>(entry, {
      kind,
      connection,
      id,
      notRun: () => (alternatives !== undefined ? { completions: [], limitedBy: 'cancelled', totalMs: 0 } : completionNotRun()),
      run: (session, signal) =>
        alternatives !== undefined
          ? session.alternatives(request, alternatives, signal, overrides()).then((result) => this.completed(result, result.totalMs))
          : session.complete(request, signal, overrides()).then((result) => this.completed(result, result.stats.totalMs)),
    });
  }

  /**
   * A window's next-edit request: started while no real completion waits, stopped between
   * two evaluations while one runs. It counts as a running generation only while it decodes: a
   * completion that parks it counts instead (indexing slices wait for whichever runs).
   */
  enqueueNextEdit(connection: Connection, entry: LoadedModels, id: number, request: NextEditRequest, onEdit: (edit: TextReplacement, ms: number) => void, model?: string): Promise<NextEditResult> {
    const { generations } = this;
    return this.enqueue<NextEditResult>(entry, {
      kind: 'nextEdit',
      connection,
      id,
      notRun: () => noNextEdit(request, 'cancelled', 'superseded or cancelled before it started'),
      run: (session, signal) => {
        generations.running++;
        let segmentStart = performance.now();
        const park = () => {
          generations.running--;
          // Its stretch ended with its last evaluation (the completion may have started since).
          const ended = Math.max(segmentStart, session.gate.lastCallEndedAt);
          this.recordInterval(ended, ended - segmentStart);
        };
        const resume = () => {
          generations.running++;
          segmentStart = performance.now();
        };
        return session.nextEdits
          .run(request, signal, {
            speculation: connection.speculation,
            policy: connection.nextEditPolicy,
            owner: `${ownerPrefix(connection)}next edit`,
            onEdit,
            onPark: park,
            onResume: resume,
            // The first request that names a next-edit file of its own loads it: parked meanwhile (completions run), and this window told the file.
            model,
            onNativeLoad: (file) => connection.send({ v: PROTOCOL_VERSION, type: 'modelLoading', file }),
          })
          .then((result) => {
            this.recordInterval(performance.now(), performance.now() - segmentStart);
            return result;
          })
          .finally(() => generations.running--);
      },
    });
  }

  /**
   * A short completion right after a load (InferenceSession.warmUp), so the user's first one is not
   * the slow first evaluation. It runs after the load's answer went out (the caller does not await
   * it) as the completion lane's job: any request stops it and goes first.
   */
  warmUp(entry: LoadedModels, session: InferenceSession): void {
    const lane = entry.lanes.completion;
    if (!WARM_UP || lane.running) return;
    const job: Job<void> = {
      kind: 'warmUp',
      connection: null,
      id: 0,
      controller: new AbortController(),
      run: (warming, signal) =>
        warming.warmUp(signal).then(
          (ms) => this.log('info', `warm-up completion: ${Math.round(ms)} ms${signal.aborted ? ' (cut short by a request)' : ''}`),
          (error: Error) => this.log('warn', `warm-up completion failed: ${error.message}`),
        ),
      notRun: () => undefined,
      resolve: () => undefined,
      reject: () => undefined,
    };
    lane.running = job;
    // After this turn of the event loop: the load's answer goes out first.
    setImmediate(() => this.start(entry, job, session));
  }

  /**
   * Refuses a job that gives way (a prefetch) while one that would stop it waits or runs on any
   * loaded models, this window's or another's: it neither starts behind it nor stops it. One already
   * cancelled (the keystroke before) is only winding down: it does not count.
   */
  private admit(kind: JobKind): void {
    if (!YIELDS.has(kind)) return;
    const outranks = (job: Job) => PRIORITY[job.kind] < PRIORITY[kind] && !YIELDS.has(job.kind) && !job.controller.signal.aborted;
    for (const entry of this.loaded()) {
      for (const { running, waiting } of Object.values(entry.lanes)) {
        if ((running && outranks(running)) || [...waiting.values()].some(outranks)) throw Object.assign(new Error('a completion is running'), { code: 'busy' });
      }
    }
  }

  /**
   * The one path every request takes. Per window and lane: its newer request supersedes its older
   * one, waiting (answered at once; the window keeps its turn) or running (stopped at its next step),
   * and a cancel stops only its own. Across windows nothing is cancelled but what gives way.
   */
  private enqueue<R>(entry: LoadedModels, spec: { kind: JobKind; connection: Connection; id: number; notRun(): R; run(session: InferenceSession, signal: AbortSignal): Promise<R> }): Promise<R> {
    const { kind, connection, id } = spec;
    const lane = entry.lanes[LANE[kind]];
    return new Promise<R>((resolve, reject) => {
      const previous = connection.jobs[LANE[kind]];
      const controller = new AbortController();
      const key = requestKey(connection, id);
      const settle = () => {
        this.requests.delete(key);
        if (connection.jobs[LANE[kind]] === job) connection.jobs[LANE[kind]] = null;
      };
      const job: Job<R> = {
        kind,
        connection,
        id,
        controller,
        notRun: spec.notRun,
        run: spec.run,
        resolve: (result) => (settle(), resolve(result)),
        reject: (error) => (settle(), reject(error)),
      };
      this.requests.set(key, controller);
      connection.jobs[LANE[kind]] = job as Job;
      // A waiting job that is cancelled answers at once; a running one stops at its next step.
      controller.signal.addEventListener('abort', () => {
        if (lane.waiting.get(connection) !== job) return;
        lane.waiting.delete(connection);
        job.resolve(job.notRun());
      });
      if (previous && lane.waiting.get(connection) === previous) {
        lane.waiting.set(connection, job as Job);
        previous.resolve(previous.notRun());
        previous.controller.abort();
      } else {
        previous?.controller.abort();
        lane.waiting.set(connection, job as Job);
      }
      // What gives way to it stops, of any window (a waiting one answers at once through its abort listener).
      for (const other of LANES) {
        const { running, waiting } = entry.lanes[other];
        for (const j of [...(running ? [running] : []), ...waiting.values()]) {
          if (j !== job && YIELDS.has(j.kind) && PRIORITY[j.kind] > PRIORITY[kind]) j.controller.abort();
        }
      }
      this.serve(entry);
    });
  }

  /** Starts what comes next on these models, in each lane where nothing runs. */
  private serve(entry: LoadedModels): void {
    for (const lane of LANES) this.serveLane(entry, lane);
  }

  private serveLane(entry: LoadedModels, laneName: Lane): void {
    const lane = entry.lanes[laneName];
    if (lane.running) return;
    let job: Job | undefined;
    for (const waiting of lane.waiting.values()) if (!job || PRIORITY[waiting.kind] < PRIORITY[job.kind]) job = waiting;
    if (!job) return;
    // Not while a job of another lane that outranks it and does not give way waits (a next edit waits for real completions).
    for (const other of LANES) {
      if (other === laneName) continue;
      for (const waiting of entry.lanes[other].waiting.values()) if (PRIORITY[waiting.kind] < PRIORITY[job.kind] && !YIELDS.has(waiting.kind)) return;
    }
    lane.waiting.delete(job.connection!);
    const session = entry.session;
    if (!session || job.connection!.models !== entry) {
      job.reject(notLoaded());
      this.serveLane(entry, laneName);
      return;
    }
    lane.running = job;
    this.start(entry, job, session);
  }

  /**
   * Runs a job that is its lane's running one on `session` (a completion-lane job counted as running),
   * answers with what it returns, then starts the lane's next.
   */
  private start(entry: LoadedModels, job: Job, session: InferenceSession): void {
    const lane = entry.lanes[LANE[job.kind]];
    const done = () => {
      if (lane.running === job) lane.running = null;
      this.serve(entry);
    };
    // A next edit counts itself, only while it decodes (enqueueNextEdit).
    const counted = LANE[job.kind] !== 'nextEdit';
    if (counted) this.generations.running++;
    job
      .run(session, job.controller.signal)
      .then(job.resolve, job.reject)
      .finally(() => {
        if (counted) this.generations.running--;
        done();
      });
  }

  /** A completion (or alternatives) finished: counted, its interval recorded. */
  private completed<R>(result: R, ms: number): R {
    this.generations.completed++;
    this.recordInterval(performance.now(), ms);
    return result;
  }

  /**
   * A generation (or a stretch of a next-edit request between two stops for completions) just ended
   * after running `durationMs`: it overlapped every recent one that ended after it started. The handler resumes in a microtask after the decoder returns, so `endedAt` is its end.
   */
  private recordInterval(endedAt: number, durationMs: number): void {
    const startedAt = endedAt - durationMs;
    // 1 ms of slack: the previous generation's end is stamped a microtask after it really ended.
    const overlapping = this.recentGenerationEnds.filter((end) => end > startedAt + 1).length;
    this.generations.maxConcurrent = Math.max(this.generations.maxConcurrent, overlapping + 1);
    this.recentGenerationEnds.push(endedAt);
    if (this.recentGenerationEnds.length > 16) this.recentGenerationEnds.shift();
  }
}
