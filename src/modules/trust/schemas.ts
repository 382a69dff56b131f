import { Type } from 'typebox';
import { IsoTime, Nullable } from '../../http/response-schemas';

const Index = (description: string) => Type.Integer({ minimum: 0, maximum: Number.MAX_SAFE_INTEGER, description });
const Size = (description: string) => Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, description });

export const EntriesQuery = Type.Object({
  start: Index('First index (inclusive)'),
  end: Type.Optional(Size('End index (exclusive); at most 1000 entries are returned, fewer at the end of the log')),
});

export const InclusionQuery = Type.Object({
  index: Index('Index of the entry'),
  tree_size: Size('Size of the tree the proof is for (the size of a checkpoint you hold)'),
});

export const ConsistencyQuery = Type.Object({
  first: Size('The older tree size'),
  second: Size('The newer tree size'),
});

export const RangeValidationCodes = {
  'querystring.*': { status: 422, code: 'TRUST_LOG_RANGE_INVALID', message: 'Log positions are whole numbers: start and index from 0, sizes from 1' },
};

// ---- responses ----

const Status = Type.String({ description: 'success' });
const Base64 = (description: string) => Type.String({ description: `${description} (base64)` });

/** A custody epoch (epochs.ts view): the passport, the reputation history and the decision trace show it. */
export const EpochView = Type.Object({
  epoch: Type.Integer(),
  opened_at: IsoTime(),
  opened_by: Type.String({ description: 'registration, recovery or custody_transfer' }),
  closed_at: Nullable(IsoTime()),
  open_log_index: Nullable(Type.Integer({ description: 'The epoch.opened trust log entry (null for an epoch opened before the log)' })),
});

/** A log entry as its RFC 8785 bytes encode it (log.ts entryObject); `data` is the fact's own record, one shape per kind. */
export const LogEntryObject = Type.Object({
  v: Type.Integer({ description: 'Entry format version: 1' }),
  index: Type.Integer(),
  kind: Type.String(),
  at: IsoTime(),
  agent_id: Nullable(Type.String()),
  epoch: Nullable(Type.Integer()),
  data: Type.Object({}, { additionalProperties: true, description: 'The fact (docs/trust.md lists each kind\'s fields)' }),
});

/** The C2SP signed note of a checkpoint: text/plain, not JSON. */
export const CheckpointNote = {
  content: {
    'text/plain': {
      schema: Type.String({ description: 'C2SP tlog-checkpoint body (origin, tree size, base64 root hash) followed by a blank line and Ed25519 signature lines' }),
    },
  },
  description: 'The latest signed checkpoint (C2SP signed note)',
};

export const EntriesResponse = Type.Object({
  status: Status,
  tree_size: Type.Integer(),
  entries: Type.Array(Type.Object({
    index: Type.Integer(),
    leaf_hash: Base64('RFC 9162 leaf hash of entry_jcs'),
    entry: LogEntryObject,
    entry_jcs: Type.String({ description: 'The entry\'s RFC 8785 bytes as UTF-8: what the leaf hash is computed over' }),
  })),
});

export const InclusionResponse = Type.Object({
  status: Status,
  index: Type.Integer(),
  tree_size: Type.Integer(),
  hashes: Type.Array(Base64('An RFC 9162 audit path node'), { description: 'The inclusion proof, leaf to root' }),
});

export const ConsistencyResponse = Type.Object({
  status: Status,
  first: Type.Integer(),
  second: Type.Integer(),
  hashes: Type.Array(Base64('An RFC 9162 consistency proof node')),
});

export const TrustLogKey = Type.Object({
  origin: Type.String({ description: 'The checkpoint origin and key name' }),
  verifier_key: Type.String({ description: 'C2SP note verifier key: <name>+<hex key id>+<base64 type byte and key>' }),
  public_key: Type.String({ description: 'PEM SPKI Ed25519 public key' }),
  key_algorithm: Type.String({ description: 'ed25519' }),
  checkpoint_url: Type.String(),
});

/** One derived fact of the decision trace: its value, the rule and the entries behind it; sections add fields of their own. */
const TracedFact = Type.Object({
  value: Type.Unknown(),
  rule: Type.String(),
  log_indexes: Type.Array(Type.Integer()),
}, { additionalProperties: true });

export const DecisionTraceResponse = Type.Object({
  status: Status,
  agent_id: Type.String(),
  generated_at: IsoTime(),
  epochs: Type.Array(EpochView),
  facts: Type.Record(Type.String(), TracedFact, { description: 'Per derived fact (current_epoch, trust_levels, reputation, stake, ...)' }),
  log_entries_by_kind: Type.Record(Type.String(), Type.Integer()),
});

export const ParityResponse = Type.Object({
  status: Status,
  check_id: Type.String(),
  checked_at: IsoTime(),
  tree_size: Type.Integer(),
  entries_replayed: Type.Integer(),
  agents_checked: Type.Integer(),
  mismatch_count: Type.Integer(),
  mismatches: Type.Array(Type.Object({
    projection: Type.String(),
    key: Type.String(),
    field: Type.String(),
    expected: Type.Unknown(),
    stored: Type.Unknown(),
  }), { description: 'The first 200 (all are counted)' }),
  ok: Type.Boolean(),
  duration_ms: Type.Integer(),
});

const Counts = Type.Record(Type.String(), Type.Integer());

/**
 * Counts of each trust feature's use: the trust log's own, then one section per trust module (each
 * registers its counts with the trust module; a section is absent when its module is not part of the app).
 */
export const AdoptionResponse = Type.Object({
  status: Status,
  generated_at: IsoTime(),
  window_days: Type.Integer({ description: 'The window of the *_in_window counts' }),
  trust_log_entries: Type.Integer(),
  epochs_opened_by: Counts,
  identity: Type.Optional(Type.Object({
    listed_agents: Type.Integer(),
    covenants_by_template: Counts,
    recovery_keys_enrolled: Type.Integer(),
    scoped_keys_active: Type.Integer(),
    ephemeral_passports_last_30d: Type.Integer(),
  })),
  reputation: Type.Optional(Type.Object({
    events: Type.Integer(),
    events_in_window: Type.Integer(),
    subjects: Type.Integer(),
    raters: Type.Integer(),
    disputes: Type.Record(Type.String(), Type.Integer(), { description: 'Per dispute status' }),
  })),
  vouches: Type.Optional(Type.Object({ active: Type.Integer(), given_in_window: Type.Integer() })),
  custody: Type.Optional(Type.Object({
    recovery_intents_by_state: Counts,
    staged_resurrections_active: Type.Integer(),
  })),
  declarations: Type.Optional(Type.Object({
    consolidation_policies: Type.Integer(),
    policy_bindings: Type.Integer(),
    journal_commitments: Type.Integer(),
    journal_commitments_in_window: Type.Integer(),
    tool_passports_active: Type.Integer(),
    delegations_in_window: Type.Integer(),
  })),
  stake: Type.Optional(Type.Object({
    stakes_by_tier: Counts,
    stakes_cooling: Type.Integer(),
    sponsorships_in_force: Type.Integer(),
    sponsorships_ring_flagged: Type.Integer(),
    slashes_in_window: Type.Integer(),
  })),
});
