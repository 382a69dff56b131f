/**
 * Clients that send slowly, or not at all, and clients refused before their body was read.
 *
 * Request bodies have a time limit. A body must keep up an average of `minBytesPerSecond` after a
 * grace of `timeoutMs`: while the body is arriving, the time spent waiting for the client may not
 * pass `timeoutMs + received bytes / minBytesPerSecond`. So a 1 MiB JSON body has its 10 s and
 * then some, a large upload at a modest rate goes on for as long as it keeps the rate, and a body
 * trickled a byte every few seconds (to `POST /v1/register`, which needs no key) is cut within
 * about `timeoutMs`. Time in which svc itself is not reading (a handler busy before it reads, the
 * disk slower than the network) is not counted against the client. A cut body is answered 408
 * REQUEST_TIMEOUT in the API's format, `Connection: close`.
 *
 * A response sent before its request body was all read (a 413 for a too-large body, a 401 before
 * an upload, a 404, a 415, the 408 above) closes the connection, but not at once: a client still
 * sending would get a reset, and many (fetch among them) then report EPIPE instead of the answer
 * waiting in their receive buffer. So svc sends the answer, ends its side, and goes on reading and
 * discarding the body for at most `lingerMs` or `lingerMaxBytes`, whichever comes first, then closes
 * (at once when the body ends).
 *
 * Connections per instance are capped (`maxConnections`, Node's server limit): a connection over the
 * cap is closed as soon as it is accepted.
 */
import type { FastifyInstance } from 'fastify';
import type { IncomingMessage } from 'node:http';
import { Socket } from 'node:net';
import { ApiError } from './errors';

export interface SlowClientLimits {
  /** Grace for a request body before the minimum rate applies (ms). */
  bodyTimeoutMs: number;
  /** Average rate a body must keep up after the grace (bytes per second). */
  bodyMinBytesPerSecond: number;
  /** After an answer sent before the body was read: how long to go on reading it before closing (ms). */
  lingerMs: number;
  /** … and how many bytes of it at most. */
  lingerMaxBytes: number;
  /** Open connections per instance; more are closed as they are accepted. */
  maxConnections: number;
}

/** Whether the request declares a body that has not all arrived yet (on a real connection: not an injected request). */
const bodyPending = (req: IncomingMessage): boolean =>
  req.socket instanceof Socket && !req.complete && (req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length']) > 0);

type Pushable = IncomingMessage & { push(chunk: unknown, encoding?: BufferEncoding): boolean; _read(size: number): void };

/**
 * Watches one body as Node's parser hands it to the request stream: bytes pushed, and whether the
 * stream is full (svc not reading: that time does not count). Calls `cut` once the budget is spent.
 */
function watchBody(req: IncomingMessage, limits: SlowClientLimits, cut: () => void): () => void {
  const stream = req as Pushable;
  const started = performance.now();
  let received = 0;
  let paused = 0; // ms in which the stream was full
  let fullSince: number | undefined;
  let timer: NodeJS.Timeout | undefined;
  let done = false;
  const push = stream.push;
  const read = stream._read;
  const stop = () => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    // Own properties shadowing the prototype's: removing them restores Node's own.
    delete (stream as Partial<Pushable>).push;
    delete (stream as Partial<Pushable>)._read;
  };
  const budgetLeft = () => {
    const now = performance.now();
    const waiting = now - started - paused - (fullSince === undefined ? 0 : now - fullSince);
    return limits.bodyTimeoutMs + (received / limits.bodyMinBytesPerSecond) * 1000 - waiting;
  };
  const check = () => {
    if (done) return;
    if (fullSince !== undefined) return; // svc is not reading: re-armed when it reads again
    const left = budgetLeft();
    if (left <= 0) {
      stop();
      cut();
      return;
    }
    timer = setTimeout(check, Math.ceil(left));
    timer.unref();
  };
  stream.push = function pushCounted(chunk, encoding) {
    if (chunk === null) stop();
    else if (!done && chunk) received += (chunk as Buffer).length;
    const more = push.call(this, chunk, encoding);
    if (!done && !more && fullSince === undefined) {
      fullSince = performance.now();
      clearTimeout(timer);
    }
    return more;
  };
  stream._read = function readCounted(size) {
    if (!done && fullSince !== undefined) {
      paused += performance.now() - fullSince;
      fullSince = undefined;
      check();
    }
    return read.call(this, size);
  };
  check();
  return stop;
}

/**
 * Reads and discards the rest of a refused request's body for a bounded time and size after the
 * answer, then closes: Node's `socket.destroySoon` (the close after a `Connection: close` answer),
 * replaced on this one socket.
 */
function lingerOnClose(socket: Socket, req: IncomingMessage, limits: SlowClientLimits): void {
  const own = socket as Socket & { destroySoon?: () => void };
  if (Object.hasOwn(own, 'destroySoon')) return;
  own.destroySoon = function lingeringDestroySoon(this: Socket) {
    delete (own as { destroySoon?: unknown }).destroySoon;
    if (req.complete || this.destroyed) return this.destroySoon();
    const from = this.bytesRead;
    let poll: NodeJS.Timeout | undefined;
    const close = () => {
      clearTimeout(deadline);
      clearInterval(poll);
      this.destroy();
    };
    const deadline = setTimeout(close, limits.lingerMs);
    poll = setInterval(() => {
      if (this.bytesRead - from > limits.lingerMaxBytes) close();
    }, 20);
    deadline.unref();
    poll.unref();
    this.once('close', close);
    // The client has sent it all: close as Node would have (once the answer is flushed).
    req.once('end', () => {
      clearTimeout(deadline);
      clearInterval(poll);
      this.destroySoon();
    });
    // The answer goes first, then this side's FIN; reading goes on (HTTP sockets are half-open).
    if (this.writable) this.end();
    // Discard the rest (as Node's own dump of an unread body): no consumer keeps it.
    req.unpipe();
    req.removeAllListeners('data');
    req.resume();
  };
}

/**
 * On close, connections a client opened and never wrote a byte to (a browser's preconnect) are
 * closed with the idle ones. Nothing is in flight on them, but Node's closeIdleConnections (Fastify's
 * `forceCloseConnections: 'idle'`) leaves them open, so a graceful close would wait for them until
 * the client went away or a timeout closed them: up to a minute with a browser's spare socket.
 */
function closeSilentConnectionsOnClose(app: FastifyInstance): void {
  const open = new Set<Socket>();
  app.server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
  app.addHook('preClose', async () => {
    for (const socket of open) if (socket.bytesRead === 0) socket.destroy();
  });
}

export function installSlowClientLimits(app: FastifyInstance, limits: SlowClientLimits): void {
  app.server.maxConnections = limits.maxConnections;
  closeSilentConnectionsOnClose(app);
  app.addHook('onRequest', async (request, reply) => {
    const req = request.raw;
    if (!bodyPending(req)) return;
    const stop = watchBody(req, limits, () => {
      const err = new ApiError(408, 'REQUEST_TIMEOUT',
        `The request body did not arrive in time (it must keep up ${limits.bodyMinBytesPerSecond} bytes a second after the first ${limits.bodyTimeoutMs} ms)`,
        {}, { connection: 'close' });
      // Whoever reads the body (Fastify's parser, an upload's pipe) fails with the 408, as with a
      // client that went away; when nothing is reading it, it is answered here.
      if (req.listenerCount('error') > 0) req.emit('error', err);
      setImmediate(() => {
        if (!reply.sent && !reply.raw.headersSent) void reply.code(408).header('connection', 'close').send({ error_code: err.code, message: err.message });
      });
    });
    reply.raw.once('close', stop);
  });
  // An answer before the body was all read: Connection: close, after a bounded read of the rest.
  app.addHook('onSend', async (request, reply) => {
    const req = request.raw;
    if (!bodyPending(req)) return;
    reply.header('connection', 'close');
    lingerOnClose(req.socket, req, limits);
  });
}
