/**
 * Tables of the memory area: the per-agent ledger, its live pointers and counters, the commons, and
 * the vector store shared by memory, commons and blob search (src/infra/vectors).
 * Times are epoch milliseconds; booleans 0/1; JSON as text.
 */

/** Append-only ledger: every PUT and DELETE of a key is one version (1, 2, 3 ... per key). */
export interface MemoryVersionsTable {
  agent_id: string;
  key: string;
  version: number;
  op: string; // put | delete
  value: string | null; // compact JSON; null for a tombstone
  size_bytes: number; // UTF-8 bytes of `value`
  importance: string | null;
  source: string | null;
  confidence: number | null;
  derived_start: number | null;
  derived_end: number | null;
  expires_at: number | null;
  created_at: number;
}

/** Live pointer: one row per key ever written, naming its latest version and its state. */
export interface MemoryHeadsTable {
  agent_id: string;
  key: string;
  version: number;
  state: string; // live | deleted | expired (expired: removed by the sweeper)
  size_bytes: number;
  importance: string;
  importance_rank: number; // critical 4, high 3, normal 2, low 1
  source: string | null;
  confidence: number;
  expires_at: number | null;
  created_at: number; // when the key last became live
  updated_at: number;
}

/** Per-agent counter of bytes of latest live values (expired ones until swept; reads subtract those). */
export interface MemoryAgentsTable {
  agent_id: string;
  storage_bytes: number;
  live_keys: number;
}

/** Memory operations per agent and UTC month ('2026-11'); only `writes` counts against the write cap. */
export interface MemoryUsageTable {
  agent_id: string;
  month: string;
  writes: number;
  searches: number;
}

/** Commons: entries published for every authenticated agent to read. */
export interface CommonsEntriesTable {
  entry_id: string;
  publisher_id: string;
  key: string;
  value: string; // compact JSON
  size_bytes: number;
  tags: string; // JSON array of strings
  source: string | null;
  confidence: number;
  vouch_count: number;
  created_at: number;
  updated_at: number;
  deleted_at: number | null;
}

export interface CommonsVouchesTable {
  entry_id: string;
  agent_id: string;
  created_at: number;
}

/** One stored vector per (collection, owner, item); `model_id` says which model made it. */
export interface VectorItemsTable {
  id: number; // integer row id; also the rowid of the sqlite-vec shadow table
  collection: string;
  owner_id: string;
  item_id: string;
  model_id: string;
  /** Version of the item the vector was made from: an older one never overwrites a newer one. */
  item_version: number;
  dimensions: number;
  embedding: Buffer; // little-endian float32, L2-normalised
  updated_at: number;
}

/** Items whose vector must be (re)computed: filled in the writer's transaction, drained by the indexer. */
export interface VectorOutboxTable {
  collection: string;
  owner_id: string;
  item_id: string;
  /** Replaced on every enqueue: the indexer deletes the row only if no newer write re-enqueued it. */
  ticket: string;
  enqueued_at: number;
  /** Times the model refused this item's text since it was last enqueued (a new write resets it). */
  attempts: number;
  /** Epoch ms before which the indexer leaves the row alone (set after a refusal); null: ready. */
  not_before: number | null;
}

/** One indexed text per (collection, owner, item) of the lexical index (src/infra/lexical); `doc_len` in terms. */
export interface LexicalDocsTable {
  id: number; // also the rowid of the SQLite FTS5 table lexical_fts
  collection: string;
  owner_id: string;
  item_id: string;
  doc_len: number;
  /** Hash of the text the terms were made from (src/infra/lexical); null in rows indexed before it was kept. */
  text_hash: string | null;
  /** SQLite only (migration 0108): the terms waiting to move into lexical_fts, null once they have (src/infra/lexical/pending.ts). */
  pending_terms?: string | null;
  /** SQLite only: 1 when lexical_fts holds a row of the item (its previous terms while new ones wait). */
  in_fts?: number;
  // PostgreSQL only: tsv tsvector (written with raw SQL).
}

/** Per (collection, owner): indexed items and their total terms (BM25's N and average length). */
export interface LexicalStatsTable {
  collection: string;
  owner_id: string;
  docs: number;
  tokens: number;
}

export interface MemoryTables {
  memory_versions: MemoryVersionsTable;
  memory_heads: MemoryHeadsTable;
  memory_agents: MemoryAgentsTable;
  memory_usage: MemoryUsageTable;
  commons_entries: CommonsEntriesTable;
  commons_vouches: CommonsVouchesTable;
  vector_items: VectorItemsTable;
  vector_outbox: VectorOutboxTable;
  lexical_docs: LexicalDocsTable;
  lexical_stats: LexicalStatsTable;
}
