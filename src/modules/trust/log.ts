/**
 * The trust log: one append-only entry per trust fact, written in the caller's transaction, with
 * RFC 9162 inclusion and consistency proofs and C2SP signed checkpoints. Other trust modules append
 * through `append(trx, fact)` in the same transaction as the projection rows they update.
 */
import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto';
import type { Transaction } from 'kysely';
import type { Database } from '../../infra/db/schema';
import { canonicalJson } from '../../infra/tlog/jcs';
import { consistencyProof, EMPTY_ROOT, inclusionProof, leafHash, nodesCompletedByAppend, rootAt } from '../../infra/tlog/merkle';
import { checkpointBody, signNote, verifierKey } from '../../infra/tlog/checkpoint';
import { ApiError } from '../../http/errors';
import { iso, type Clock } from '../../lib/clock';
import { generateEd25519 } from '../../lib/ed25519';
import { nodeReader, type TrustLogStore } from './log-store';
import type { CommitSync } from '../../infra/db/commit-sync';
import { createWriteBatcher } from '../../infra/db/write-batcher';
import { scopeOf, type ScopeSlot } from '../../infra/db/trx-scope';
import type { TrustLogEntriesTable } from '../../infra/db/tables/trust';
import type { NodeReader, StoredNode } from '../../infra/tlog/merkle';

/** Kinds of trust facts (entry `kind`). */
export type TrustKind =
  | 'epoch.opened' | 'epoch.closed'
  | 'reputation.interaction' | 'reputation.dispute.filed' | 'reputation.dispute.decided'
  | 'key.created' | 'key.revoked' | 'passport.revoked' | 'passport.rotated'
  | 'vouch.given' | 'vouch.revoked'
  | 'covenant.bound' | 'covenant.amended'
  | 'recovery.intent.opened' | 'recovery.intent.vetoed' | 'recovery.initiated' | 'recovery.completed' | 'custody.transferred'
  | 'consolidation.amended' | 'policy_binding.amended' | 'delegation.issued' | 'journal.committed'
  | 'tool.registered' | 'tool.rotated' | 'tool.revoked'
  | 'stake.locked' | 'stake.unstake_requested' | 'stake.released' | 'stake.slashed'
  | 'sponsorship.created' | 'sponsorship.revoked' | 'sponsorship.ring_flagged';

export interface TrustFact {
  kind: TrustKind;
  /** The agent the fact is about (the subject), when there is one. */
  agentId: string | null;
  epoch: number | null;
  data: Record<string, unknown>;
  /** When the fact happened (defaults to now). */
  at?: number;
}

export interface AppendedFact { index: number; leafHash: string; at: number }

/** The JSON object whose RFC 8785 bytes are a log entry. */
export function entryObject(index: number, fact: TrustFact, at: number) {
  return { v: 1, index, kind: fact.kind, at: iso(at), agent_id: fact.agentId, epoch: fact.epoch, data: fact.data };
}

/** Greatest span of entries one read returns. */
export const MAX_ENTRIES_PER_READ = 1000;

export interface TrustLogDeps {
  store: TrustLogStore;
  clock: Clock;
  /** Checkpoint origin and key name, e.g. `svc.example.com/trust-log`. */
  origin: string;
  /** PEM PKCS#8 Ed25519 key from the settings; unset: the key kept in the database (made at first start). */
  privateKeyPem?: string;
  /** A new checkpoint is signed on request when the tree grew and the last one is at least this old. */
  checkpointIntervalMs: number;
  /** Group commit for `write` (the database's; see infra/db/commit-sync.ts). */
  commits: CommitSync;
}

/** Appends of one transaction scope not yet written: the head's size, their entries and the subtree nodes they completed. */
interface PendingAppends { size: number; entries: TrustLogEntriesTable[]; nodes: Map<string, StoredNode> }

const nodeKey = (level: number, index: number) => `${level}/${index}`;

/** Reads nodes appended earlier in the same scope from memory, the rest from the database. */
function pendingFirst(pending: Map<string, StoredNode>, stored: NodeReader): NodeReader {
  return async (ids) => {
    const missing = ids.filter((n) => !pending.has(nodeKey(n.level, n.index)));
    const read = missing.length ? await stored(missing) : [];
    const fromDb = new Map(missing.map((n, i) => [nodeKey(n.level, n.index), read[i]]));
    return ids.map((n) => pending.get(nodeKey(n.level, n.index))?.hash ?? (fromDb.get(nodeKey(n.level, n.index)) as Buffer));
  };
}

export async function createTrustLog(deps: TrustLogDeps) {
  const { store, clock, origin } = deps;
  const pem = deps.privateKeyPem ?? await store.signingKey(() => generateEd25519().privateKeyPem, clock.now());
  const privateKey: KeyObject = createPrivateKey(pem);
  const publicKey = createPublicKey(privateKey);
  const vkey = verifierKey(origin, publicKey);
  let lastSignedAt = -Infinity;

  const rangeError = (message: string) => new ApiError(422, 'TRUST_LOG_RANGE_INVALID', message);
  // Appends serialise on the head row, so one transaction per fact would make every fact wait for its
  // own commit and flush; trust writes that arrive together share one transaction instead.
  const batcher = createWriteBatcher(deps.commits);

  /**
   * In a write batch (a transaction scope, infra/db/trx-scope.ts) the head is locked and read once,
   * and the scope's entries, nodes and new size are written together when it ends; outside one,
   * each append writes at once.
   */
  const pendingSlot: ScopeSlot<PendingAppends> = {
    end: (trx, p) => store.writeAppends(trx, p.entries, [...p.nodes.values()], p.size),
    discard: () => {},
  };
  async function pendingOf(trx: Transaction<Database>): Promise<PendingAppends> {
    const scope = scopeOf(trx);
    const held = scope?.get(pendingSlot);
    if (held) return held;
    const p: PendingAppends = { size: await store.lockHead(trx), entries: [], nodes: new Map() };
    scope?.set(pendingSlot, p);
    return p;
  }

  return {
    origin,
    verifierKey: vkey,
    publicKeyPem: publicKey.export({ format: 'pem', type: 'spki' }).toString(),

    /**
     * Runs `run` (a change and the facts it appends) in a transaction shared with the other trust
     * writes that arrive meanwhile (infra/db/write-batcher.ts: group commit, each write in its own
     * savepoint when one of the batch fails); resolves once that transaction is committed and on disk.
     * `run` may run twice (an optimistic batch that failed runs again with savepoints), so it writes
     * only through `trx`. `key` orders a batch's writes (the subject agent's id).
     */
    write<T>(run: (trx: Transaction<Database>) => Promise<T>, key = ''): Promise<T> {
      return batcher.submit(run, key);
    },

    /** Takes the append lock early (a caller that must read-then-decide under it). */
    async lockHeadFor(trx: Transaction<Database>): Promise<void> {
      await pendingOf(trx);
    },

    /**
     * Appends one fact inside `trx` (the transaction of the change it records) and returns its index.
     * Inside a write batch the entry reaches the table when the batch's scope ends (before COMMIT):
     * read entries back after `write` resolves, not within it.
     */
    async append(trx: Transaction<Database>, fact: TrustFact): Promise<AppendedFact> {
      const p = await pendingOf(trx);
      const index = p.size;
      const at = fact.at ?? clock.now();
      const bytes = canonicalJson(entryObject(index, fact, at));
      const leaf = leafHash(bytes);
      const nodes = await nodesCompletedByAppend(index, leaf, pendingFirst(p.nodes, nodeReader(trx)));
      const entry: TrustLogEntriesTable = {
        log_index: index, kind: fact.kind, agent_id: fact.agentId, epoch: fact.epoch,
        entry: bytes.toString('utf8'), leaf_hash: leaf.toString('hex'), created_at: at,
      };
      p.size = index + 1;
      if (scopeOf(trx)) {
        p.entries.push(entry);
        for (const n of nodes) p.nodes.set(nodeKey(n.level, n.index), n);
      } else {
        await store.writeAppends(trx, [entry], nodes, p.size);
      }
      return { index, leafHash: leaf.toString('hex'), at };
    },

    size: () => store.size(),

    async entries(start: number, end: number | undefined) {
      const size = await store.size();
      const stop = Math.min(end ?? start + 100, size, start + MAX_ENTRIES_PER_READ);
      if (start >= size) throw rangeError(`start must be below the tree size (${size})`);
      if (end !== undefined && end <= start) throw rangeError('end must be greater than start');
      const rows = await store.entries(start, stop);
      return {
        tree_size: size,
        entries: rows.map((r) => ({
          index: Number(r.log_index),
          leaf_hash: Buffer.from(r.leaf_hash, 'hex').toString('base64'),
          entry: JSON.parse(r.entry) as ReturnType<typeof entryObject>,
          entry_jcs: r.entry,
        })),
      };
    },

    async inclusion(index: number, treeSize: number) {
      const size = await store.size();
      if (treeSize > size) throw rangeError(`tree_size is beyond the log (size ${size})`);
      if (index >= treeSize) throw rangeError('index must be below tree_size');
      const hashes = await inclusionProof(index, treeSize, nodeReader(store.db));
      return { index, tree_size: treeSize, hashes: hashes.map((h) => h.toString('base64')) };
    },

    async consistency(first: number, second: number) {
      const size = await store.size();
      if (second > size) throw rangeError(`second is beyond the log (size ${size})`);
      if (first > second) throw rangeError('first must not be greater than second');
      const hashes = await consistencyProof(first, second, nodeReader(store.db));
      return { first, second, hashes: hashes.map((h) => h.toString('base64')) };
    },

    /** The newest signed checkpoint, signing one for the current size when the tree grew. */
    async checkpoint(): Promise<string> {
      const [size, latest] = await Promise.all([store.size(), store.latestCheckpoint()]);
      const mono = performance.now();
      if (latest && (Number(latest.tree_size) === size || mono - lastSignedAt < deps.checkpointIntervalMs)) return latest.note;
      const root = size === 0 ? EMPTY_ROOT : await rootAt(size, nodeReader(store.db));
      const note = signNote(checkpointBody(origin, size, root), origin, privateKey);
      lastSignedAt = mono;
      await store.saveCheckpoint({ tree_size: size, root_hash: root.toString('hex'), note, signed_at: clock.now() });
      return note;
    },
  };
}

export type TrustLog = Awaited<ReturnType<typeof createTrustLog>>;
