// The two ways a client reaches its inference worker: a private child process's IPC channel, or a
// connection to the worker all windows share. Both deliver the worker's messages and its end the same
// way, so the client above them does not care which it has.
import { fork } from 'node:child_process';
import type { Socket } from 'node:net';
import { readFrames, writeFrame } from './frames';
import type { ClientMessage, WorkerMessage } from './protocol';
import { type SharedWorkerAddress, sharedWorkerEnd, workerEnvironment } from './sharedWorker';

/** How the client reaches its worker: a private child's IPC channel or the shared worker's socket. */
export interface Channel {
  send(message: ClientMessage): boolean;
  /** Stops this client's use: a private worker is killed, a shared one only loses this connection. */
  close(): void;
}

/** Where a channel delivers what comes from its worker. */
export interface ChannelEvents {
  onMessage(message: WorkerMessage): void;
  /** The worker behind `channel` ended; `description` says how. */
  onExit(channel: Channel, description: string): void;
  log?(level: 'debug' | 'info' | 'warn' | 'error', message: string): void;
}

/** Starts a private worker (`workerPath`) as a child process, `env` over the worker's environment. */
export function forkChannel(workerPath: string, env: NodeJS.ProcessEnv | undefined, events: ChannelEvents): Channel {
  const child = fork(workerPath, [], {
    // Inside Electron (desktop VS Code) the same binary runs as plain Node with this flag.
    // An explicit environment, as for the shared worker (sharedWorker.ts workerEnvironment).
    env: { ...workerEnvironment(), ...env, ELECTRON_RUN_AS_NODE: '1' },
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    execArgv: [],
    serialization: 'advanced',
  });
  const channel: Channel = {
    send: (message) => {
      if (!child.connected) return false;
      try {
        child.send(message);
        return true;
      } catch {
        return false;
      }
    },
    close: () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      setTimeout(() => child.exitCode === null && child.signalCode === null && child.kill('SIGKILL'), 3000).unref();
    },
  };
  child.stdout?.on('data', (d: Buffer) => events.log?.('debug', `worker: ${d.toString().trimEnd()}`));
  child.stderr?.on('data', (d: Buffer) => events.log?.('warn', `worker: ${d.toString().trimEnd()}`));
  child.on('message', (message: WorkerMessage) => events.onMessage(message));
  child.on('exit', (code, signal) => events.onExit(channel, signal ? `inference worker was killed by ${signal}` : `inference worker exited with code ${code}`));
  child.on('error', (error) => events.log?.('error', `worker process error: ${error.message}`));
  return channel;
}

/**
 * A connection to the shared worker at `address`. `workerPid(channel)` is the worker's pid while
 * `channel` is still the client's own (undefined otherwise): only then is its end looked up.
 */
export function socketChannel(socket: Socket, address: SharedWorkerAddress, events: ChannelEvents, workerPid: (channel: Channel) => number | undefined): Channel {
  const channel: Channel = {
    send: (message) => {
      if (socket.destroyed || !socket.writable) return false;
      writeFrame(socket, message);
      return true;
    },
    close: () => socket.destroy(),
  };
  readFrames(
    socket,
    (message) => events.onMessage(message as WorkerMessage),
    (error) => {
      events.log?.('error', `the shared inference worker sent what is not a message (${error.message})`);
      socket.destroy();
    },
  );
  socket.on('error', (error) => events.log?.('warn', `shared inference worker connection: ${error.message}`));
  // The worker died (a native abort takes every window's connection) or was stopped. How, only the
  // window that started it learns (a signal goes to a process's parent): it writes it down.
  socket.on('close', () => {
    const pid = workerPid(channel);
    const ended = (how: string | null) => events.onExit(channel, `the shared inference worker ended (${how ?? 'how is not known'})`);
    if (pid === undefined) ended(null);
    else void sharedWorkerEnd(address, pid).then(ended);
  });
  return channel;
}
