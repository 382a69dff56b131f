/**
 * Worker thread of the extractor (see extractor.ts): runs extractContent off the event loop.
 *
 * Protocol: in  { id, body: Uint8Array, contentType, url? }
 *           out { ready: true } once, when the modules are loaded (a page's time limit starts then);
 *               { id, ok: true, result: Extracted } | { id, ok: false, code?, reason?, message }
 */
import { parentPort } from 'node:worker_threads';
import { isWebError } from './errors';
import { extractContent } from './extract';

const port = parentPort!;

port.on('message', (msg: { id: number; body: Uint8Array; contentType: string; url?: string }) => {
  try {
    const result = extractContent({ body: Buffer.from(msg.body.buffer, msg.body.byteOffset, msg.body.byteLength), contentType: msg.contentType, url: msg.url });
    port.postMessage({ id: msg.id, ok: true, result });
  } catch (err) {
    if (isWebError(err)) port.postMessage({ id: msg.id, ok: false, code: err.code, reason: err.reason, message: err.message });
    else port.postMessage({ id: msg.id, ok: false, message: err instanceof Error ? err.message : String(err) });
  }
});
port.postMessage({ ready: true });
