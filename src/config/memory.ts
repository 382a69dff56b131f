import { group, int } from './define';

// Per-agent memory (src/modules/memory) and the commons. See docs/memory.md.
export const memorySettings = group('Memory', {
  memoryBodyLimitBytes: int('SVC_MEMORY_BODY_LIMIT_BYTES', 4_194_304,
    'Largest request body accepted by PUT /v1/memory/{key} and commons publish. Larger than the 512 KB value limit on purpose: ' +
    'a JSON body may spell the same value with escapes (\\u00e9) and whitespace, and the value limit is checked on the value ' +
    're-serialized compactly, so a body over 512 KB must still reach that check and get 413 MEMORY_VALUE_TOO_LARGE.',
    { min: 600_000, max: 64 * 1024 * 1024 }),
  memoryRatePerMinute: int('SVC_MEMORY_RATE_PER_MINUTE', 600,
    'Memory requests (every /v1/memory route, all methods) one agent may make per minute, counted in fixed one-minute windows; ' +
    'past it: 429 RATE_LIMIT_EXCEEDED with Retry-After. Held in Redis when REDIS_URL is set (shared by all instances), ' +
    'otherwise in this process. 0 disables the limit.',
    { min: 0, max: 10_000_000 }),
  memorySweepIntervalSeconds: int('SVC_MEMORY_SWEEP_INTERVAL_SECONDS', 60,
    'How often expired memory entries (ttl) are swept: their storage is released and their vectors removed. ' +
    'Expired entries read as absent at once, whatever this interval. 0 disables the background sweeper.',
    { min: 0, max: 86_400 }),
  searchEmbedWaitMs: int('SVC_SEARCH_EMBED_WAIT_MS', 150,
    'How long a memory, commons or blob search waits, once its query is embedded, for the searcher\'s 8 newest pending items ' +
    '(embedded ahead of the background backlog) so they are found by meaning too; only when the searcher has at most 100 pending (writes made just before it). ' +
    'With more pending (a bulk load) a search does not wait: pending items are found by their words, and the answer\'s pending_embeddings counts those not yet searchable by meaning.',
    { min: 0, max: 600_000 }),
  memoryIndexIntervalMs: int('SVC_MEMORY_INDEX_INTERVAL_MS', 200,
    'How often the background indexer looks for memory, commons and blob-chunk writes waiting in the outbox (it keeps going without a pause while any wait). ' +
    'Searches do not wait for it: see SVC_SEARCH_EMBED_WAIT_MS.',
    { min: 10, max: 600_000 }),
});
