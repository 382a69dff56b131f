import { sql } from 'kysely';
import { afterAll, describe, expect, test, vi } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../../test/helpers/engines';
import { openDatabase, type DatabaseHandle } from '../db/database';
import { migrateToLatest } from '../db/migrate';
import { createLexicalIndex, ownerTag, POSTINGS_BUDGET, rankBm25, scoredTerms, type LexicalIndex } from '.';
import { FLUSH_BATCH } from './pending';
import { normalizeText, queryTerms, stem, tokenize, tokenizeGeneral } from './tokens';

/** The same contract on FTS5 (SQLite), PGlite and the PostgreSQL server, and the same ranking. */
const cleanups: (() => Promise<void>)[] = [];
afterAll(async () => {
  for (const c of cleanups.reverse()) await c();
});

async function open(engine: 'sqlite' | 'postgres', serverUrl?: string): Promise<DatabaseHandle> {
  const saved = { e: process.env.SVC_TEST_ENGINE, pg: process.env.SVC_TEST_PG };
  process.env.SVC_TEST_ENGINE = engine;
  if (serverUrl) process.env.SVC_TEST_PG = serverUrl;
  else delete process.env.SVC_TEST_PG;
  let tdb: TestDatabase;
  try {
    tdb = await createTestDatabase();
  } finally {
    process.env.SVC_TEST_ENGINE = saved.e;
    if (saved.pg === undefined) delete process.env.SVC_TEST_PG;
    else process.env.SVC_TEST_PG = saved.pg;
  }
  const h = openDatabase({ databaseUrl: tdb.env.DATABASE_URL, dataDir: tdb.dataDir, poolMax: 1 });
  cleanups.push(async () => { await h.close(); await tdb.close(); });
  await migrateToLatest(h.db);
  return h;
}

describe('tokenize', () => {
  test('a 512 KB run of capitals (the largest memory value) is tokenised in linear time, not hung on backtracking', () => {
    const t0 = performance.now();
    expect(tokenize('A'.repeat(524_286))).toEqual(['a'.repeat(64)]);
    expect(tokenize(`${'Ab'.repeat(60)}Cd`)).toContain('ab');
    expect(performance.now() - t0).toBeLessThan(5_000);
    expect(tokenize('HTTPServerError XMLHttpRequest')).toEqual(['httpservererror', 'http', 'server', 'error', 'xmlhttprequest', 'xml', 'http', 'request']);
  });

  test('case, accents, full-width letters, identifiers, CJK, stop words, plurals', () => {
    expect(normalizeText('ÉCOLE Ｃａｆé')).toBe('ecole cafe');
    expect(tokenize('The BACKUPS run Nightly')).toEqual(['backup', 'run', 'nightly']);
    expect(tokenize('getUserById')).toEqual(['getuserbyid', 'get', 'user', 'id']);
    expect(tokenize('user.prefs:editor_theme')).toEqual(['userprefseditortheme', 'user', 'pref', 'editor', 'theme']);
    expect(tokenize('東京都')).toEqual(['東京', '京都']);
    expect(tokenize('Straße Ärger')).toEqual(['strasse', 'arger']);
    expect(tokenize('नमस्ते')).toEqual(['नमस्ते']); // Devanagari vowel signs are kept
    expect(tokenize('testing stopped string during')).toEqual(['test', 'stop', 'string', 'during']);
    expect(queryTerms('WHAT is THE Backup Backups')).toEqual(['backup']);
  });

  test('stem() follows its suffix rules exactly (checked against the rules written as regular expressions)', () => {
    const rules = (w: string): string => {
      if (w.length <= 3 || !/^[a-z]+$/.test(w)) return w;
      const undouble = (x: string) => (/([bdfgmnprt])\1$/.test(x) ? x.slice(0, -1) : x);
      if (w.endsWith('ies') && w.length > 4) return `${w.slice(0, -3)}y`;
      if (/(sses|ches|shes|xes|zes)$/.test(w)) return w.slice(0, -2);
      if (w.endsWith('s') && !/(ss|us|is)$/.test(w)) w = w.slice(0, -1);
      if (w.length >= 7 && w.endsWith('ing')) return undouble(w.slice(0, -3));
      if (w.length >= 6 && w.endsWith('ed') && !w.endsWith('eed')) return undouble(w.slice(0, -2));
      return w;
    };
    const stems = ['run', 'stop', 'plan', 'ski', 'box', 'buzz', 'church', 'wish', 'pass', 'bus', 'iris', 'agreed', 'city', 'tie', 'x', 'Ab', 'été', 'web5'];
    const endings = ['', 's', 'es', 'ies', 'ing', 'ning', 'ped', 'ed', 'eed', 'sses', 'ings', 'ned'];
    let checked = 0;
    for (const s of stems) for (const e of endings) {
      expect(stem(s + e), s + e).toBe(rules(s + e));
      checked++;
    }
    expect(checked).toBe(stems.length * endings.length);
    expect([stem('backups'), stem('running'), stem('stopped'), stem('cities'), stem('boxes'), stem('agreed')]).toEqual(['backup', 'run', 'stop', 'city', 'box', 'agreed']);
  });

  test('ASCII text takes a faster path that gives exactly the terms of the general one', () => {
    let seed = 7;
    const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
    const alphabet = 'aAbBzZxXyYeEsSiInNgGdD0123456789 .-_:/,;()\'"\n';
    const words = ['HTTPServerError', 'getUserById', 'db-1.internal', 'user.prefs', 'ABc1', 'aBCd', 'a1b2', 'web5', 'The', 'running', 'Backups', 'x'.repeat(70), `${'Ab'.repeat(70)}C`];
    for (let n = 0; n < 3000; n++) {
      let text = '';
      const len = Math.floor(next() * 60);
      for (let i = 0; i < len; i++) text += next() < 0.1 ? ` ${words[Math.floor(next() * words.length)]} ` : alphabet[Math.floor(next() * alphabet.length)];
      expect(tokenize(text), JSON.stringify(text)).toEqual(tokenizeGeneral(text));
    }
    expect(tokenize('Deploy of billing-api 3 moved to Thursday, seq: 3')).toEqual(tokenizeGeneral('Deploy of billing-api 3 moved to Thursday, seq: 3'));
  });
});

const PG_SERVER = process.env.SVC_TEST_PG_SERVER ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const cases: [string, () => Promise<DatabaseHandle>][] = [
  ['SQLite FTS5', () => open('sqlite')],
  ['PGlite', () => open('postgres')],
];
if (process.env.SVC_TEST_PG_SERVER !== 'off') cases.push(['PostgreSQL server', () => open('postgres', PG_SERVER)]);

const DOCS: [string, string][] = [
  ['d1', 'nightly backups of the postgres database run at 02:00 with restic'],
  ['d2', 'the dog is afraid of thunderstorms'],
  ['d3', 'Backup retention: keep thirty daily snapshots; backup alerts go to the on-call channel'],
  ['d4', 'Flight to Lisbon departs Tuesday'],
  ['d5', 'database migrations are applied with kysely at start'],
];

const rankings: Record<string, string[]> = {};

describe.each(cases)('%s', (name, make) => {
  let lex: LexicalIndex;
  let h: DatabaseHandle;
  test('indexes in the caller\'s transaction; upper-case queries find lower-case text; scoped by owner', async () => {
    h = await make();
    lex = createLexicalIndex(h);
    await h.db.transaction().execute(async (trx) => {
      for (const [id, text] of DOCS) await lex.put(trx, 'c', 'alice', id, text);
      await lex.put(trx, 'c', 'bob', 'b1', 'BACKUP plans of bob');
    });
    const hits = await lex.query('c', 'alice', 'DATABASE BACKUPS', 10);
    expect(hits.map((x) => x.itemId).slice(0, 2)).toEqual(['d1', expect.stringMatching(/d3|d5/)]);
    expect(hits.map((x) => x.itemId).sort()).toEqual(['d1', 'd3', 'd5']);
    rankings[name] = hits.map((x) => x.itemId);
    expect(hits[0].match).toBeGreaterThan(0.5);
    expect(hits[0].match).toBeLessThanOrEqual(1);
    expect((await lex.query('c', 'bob', 'backup', 10)).map((x) => x.itemId)).toEqual(['b1']);
    expect(await lex.query('c', 'carol', 'backup', 10)).toEqual([]);
    expect(await lex.query('other', 'alice', 'backup', 10)).toEqual([]);
    expect(await lex.query('c', 'alice', 'the of', 10)).toEqual([]); // only stop words
  }, 180_000);

  test('a re-indexed item matches its new words only; a removed one matches nothing', async () => {
    await h.db.transaction().execute((trx) => lex.put(trx, 'c', 'alice', 'd2', 'the cat sleeps on the keyboard'));
    expect(await lex.query('c', 'alice', 'thunderstorms', 10)).toEqual([]);
    expect((await lex.query('c', 'alice', 'keyboard', 10)).map((x) => x.itemId)).toEqual(['d2']);
    await h.db.transaction().execute((trx) => lex.remove(trx, 'c', 'alice', ['d2', 'd4']));
    expect(await lex.query('c', 'alice', 'keyboard lisbon', 10)).toEqual([]);
    expect(await lex.indexed('c', 'alice', ['d1', 'd2', 'd3'])).toEqual(new Set(['d1', 'd3']));
    const st = await h.db.selectFrom('lexical_stats').select(['docs']).where('collection', '=', 'c').where('owner_id', '=', 'alice').executeTakeFirstOrThrow();
    expect(Number(st.docs)).toBe(3);
  });

  test('the same text again writes nothing and says so; a changed text, or a row indexed before the hash was kept, is rewritten', async () => {
    const stats = () => h.db.selectFrom('lexical_stats').select(['docs', 'tokens']).where('collection', '=', 'c').where('owner_id', '=', 'alice').executeTakeFirstOrThrow();
    const row = () => h.db.selectFrom('lexical_docs').select(['doc_len', 'text_hash']).where('collection', '=', 'c').where('owner_id', '=', 'alice').where('item_id', '=', 'd1').executeTakeFirstOrThrow();
    const before = { st: await stats(), row: await row() };
    expect(before.row.text_hash).toMatch(/^[A-Za-z0-9+/]{27}=$/);
    expect(await h.db.transaction().execute((trx) => lex.put(trx, 'c', 'alice', 'd1', DOCS[0][1]))).toBe(false);
    expect({ st: await stats(), row: await row() }).toEqual(before);
    expect((await lex.query('c', 'alice', 'restic', 10)).map((x) => x.itemId)).toEqual(['d1']);
    // One word changed: rewritten; the old word no longer matches.
    expect(await h.db.transaction().execute((trx) => lex.put(trx, 'c', 'alice', 'd1', DOCS[0][1].replace('restic', 'borg')))).toBe(true);
    expect(await lex.query('c', 'alice', 'restic', 10)).toEqual([]);
    expect((await lex.query('c', 'alice', 'borg', 10)).map((x) => x.itemId)).toEqual(['d1']);
    expect((await row()).text_hash).not.toBe(before.row.text_hash);
    // A row without a hash (indexed before migration 0107) is rewritten by the same text, and gets one.
    await h.db.updateTable('lexical_docs').set({ text_hash: null }).where('collection', '=', 'c').where('item_id', '=', 'd1').execute();
    expect(await h.db.transaction().execute((trx) => lex.put(trx, 'c', 'alice', 'd1', DOCS[0][1]))).toBe(true);
    expect((await row()).text_hash).toBe(before.row.text_hash);
    expect((await lex.query('c', 'alice', 'restic', 10)).map((x) => x.itemId)).toEqual(['d1']);
    expect(await stats()).toEqual(before.st);
  });

  test('the counts BM25 uses (documents, total length) follow new, longer, shorter, repeated and removed items', async () => {
    const counted = async () => (await h.db.selectFrom('lexical_stats').select(['collection', 'owner_id', 'docs', 'tokens']).orderBy('collection').orderBy('owner_id').execute())
      .map((r) => ({ ...r, docs: Number(r.docs), tokens: Number(r.tokens) }));
    const actual = async () => (await h.db.selectFrom('lexical_docs').select(['collection', 'owner_id', 'doc_len']).execute())
      .map((r) => ({ ...r, doc_len: Number(r.doc_len) }));
    await h.db.transaction().execute(async (trx) => {
      await lex.put(trx, 'c', 'alice', 'n1', 'one two three');
      await lex.put(trx, 'c', 'alice', 'n1', 'one two three four five'); // longer, in the same transaction
      await lex.put(trx, 'c2', 'alice', 'n1', 'alpha');
      await lex.put(trx, 'c', 'bob', 'b1', 'bob writes a much shorter note'); // shorter than before
    });
    await h.db.transaction().execute(async (trx) => {
      expect(await lex.put(trx, 'c2', 'alice', 'n1', 'alpha')).toBe(false);
      await lex.remove(trx, 'c', 'alice', ['n1', 'missing']);
      await lex.put(trx, 'c', 'alice', 'n2', 'six');
    });
    const rows = await actual();
    const expected = new Map<string, { docs: number; tokens: number }>();
    for (const r of rows) {
      for (const key of [`${r.collection}\u0000${r.owner_id}`, ...(h.engine === 'sqlite' ? ['*\u0000*'] : [])]) {
        const e = expected.get(key) ?? { docs: 0, tokens: 0 };
        expected.set(key, { docs: e.docs + 1, tokens: e.tokens + r.doc_len });
      }
    }
    const got = (await counted()).filter((r) => r.docs !== 0 || r.tokens !== 0);
    expect(new Map(got.map((r) => [`${r.collection}\u0000${r.owner_id}`, { docs: r.docs, tokens: r.tokens }]))).toEqual(expected);
    expect(expected.get('c2\u0000alice')).toEqual({ docs: 1, tokens: 1 });
  });
});

test('both engines rank the same data alike', () => {
  const names = Object.keys(rankings);
  expect(names.length).toBeGreaterThanOrEqual(2);
  for (const n of names) expect(rankings[n]).toEqual(rankings[names[0]]);
});

test('rankBm25 is FTS5\'s formula', () => {
  // FTS5 on the same three documents: apple apple apple pear / apple pear plum plum / kiwi → 0.6422 for the second.
  const postings = [
    { item_id: '1', doc_len: 4, lexeme: 'apple', tf: 3 }, { item_id: '2', doc_len: 4, lexeme: 'apple', tf: 1 },
    { item_id: '2', doc_len: 4, lexeme: 'plum', tf: 2 },
  ];
  const hits = rankBm25(postings, ['apple', 'plum'], 3, 3, 10);
  expect(hits[0].itemId).toBe('2');
  expect(hits[0].score).toBeCloseTo(0.6421816641629599, 12);
});

test('FTS5: a term in half the documents or more is left out of the match (it weighs nothing) without changing the scores found', async () => {
  const h = await open('sqlite');
  const lex = createLexicalIndex(h);
  await h.db.transaction().execute(async (trx) => {
    for (let i = 0; i < 40; i++) await lex.put(trx, 'c', 'dana', `n${i}`, `status note ${i}${i === 7 ? ' about the kiwi harvest' : ''}${i === 9 ? ' kiwi' : ''}`);
  });
  // "note" is in every document: the query is answered by "kiwi" alone, with scores as BM25 over both terms gives them.
  const hits = await lex.query('c', 'dana', 'kiwi note', 10);
  expect(hits.map((x) => x.itemId).sort()).toEqual(['n7', 'n9']);
  const rows = (await h.db.selectFrom('lexical_docs').select(['item_id', 'doc_len']).where('owner_id', '=', 'dana').execute())
    .map((r) => ({ item_id: r.item_id, doc_len: Number(r.doc_len) }));
  const postings = rows.flatMap((r) => [
    { ...r, lexeme: 'note', tf: 1 },
    ...(r.item_id === 'n7' || r.item_id === 'n9' ? [{ ...r, lexeme: 'kiwi', tf: 1 }] : []),
  ]);
  const avgdl = rows.reduce((s, r) => s + r.doc_len, 0) / rows.length;
  const reference = new Map(rankBm25(postings, ['kiwi', 'note'], rows.length, avgdl, 40).map((x) => [x.itemId, x.score]));
  for (const x of hits) expect(x.score).toBeCloseTo(reference.get(x.itemId)!, 4);
  // Only common terms: still answered, by them.
  expect((await lex.query('c', 'dana', 'status note', 50))).toHaveLength(40);
});

test('scoredTerms: rarest first within the postings budget (the rarest always), no term of half the documents or more', () => {
  const df = new Map([['rare', 40], ['mid', 3000], ['common', 20_000], ['half', 60_000], ['absent', 0]]);
  expect(scoredTerms(['common', 'mid', 'rare', 'half', 'absent'], df, 100_000)).toEqual(['absent', 'rare', 'mid']);
  expect(scoredTerms(['common', 'half'], df, 100_000)).toEqual(['common']); // over the budget alone: still asked
  expect(scoredTerms(['half'], df, 100_000)).toEqual(['half']); // nothing else to ask
  expect(scoredTerms(['common', 'mid', 'rare'], df, 1_000_000)).toEqual(['rare', 'mid']);
  expect(POSTINGS_BUDGET).toBeGreaterThanOrEqual(3040);
});

describe('FTS5 written behind (pending.ts)', () => {
  const pendingRows = (h: DatabaseHandle) => h.db.selectFrom('lexical_docs').select(['item_id', 'in_fts'])
    .where('pending_terms', 'is not', null).orderBy('item_id').execute();
  const ids = (hits: { itemId: string }[]) => hits.map((x) => x.itemId);

  test('an item is found by its words at once, and scored the same before and after it moves into FTS5', async () => {
    const h = await open('sqlite');
    const lex = createLexicalIndex(h);
    await h.db.transaction().execute(async (trx) => {
      for (const [id, text] of DOCS) await lex.put(trx, 'c', 'alice', id, text);
    });
    expect((await pendingRows(h)).map((r) => [r.item_id, r.in_fts])).toEqual(DOCS.map(([id]) => [id, 0]));
    const before = await lex.query('c', 'alice', 'database backups restic', 10);
    expect(ids(before).slice(0, 1)).toEqual(['d1']);
    await lex.settle();
    expect(await pendingRows(h)).toEqual([]);
    const after = await lex.query('c', 'alice', 'database backups restic', 10);
    expect(ids(after)).toEqual(ids(before));
    after.forEach((x, i) => {
      expect(x.score).toBeCloseTo(before[i]!.score, 6);
      expect(x.match).toBeCloseTo(before[i]!.match, 6);
    });

    // Rewritten while FTS5 still holds the old terms: the stale row is left out, the new terms count.
    await h.db.transaction().execute((trx) => lex.put(trx, 'c', 'alice', 'd1', DOCS[0][1].replace('restic', 'borg')));
    expect((await pendingRows(h)).map((r) => [r.item_id, r.in_fts])).toEqual([['d1', 1]]);
    expect(await lex.query('c', 'alice', 'restic', 10)).toEqual([]);
    expect(ids(await lex.query('c', 'alice', 'borg backups', 10))[0]).toBe('d1');
    // Mixed: d3 and d5 from FTS5, d1 from its pending terms, one ranking.
    const mixed = await lex.query('c', 'alice', 'database backups', 10);
    expect(ids(mixed).sort()).toEqual(['d1', 'd3', 'd5']);
    expect(mixed.map((x) => x.score)).toEqual([...mixed.map((x) => x.score)].sort((a, b) => b - a));
    await lex.settle();
    expect(await lex.query('c', 'alice', 'restic', 10)).toEqual([]);
    expect(ids(await lex.query('c', 'alice', 'borg', 10))).toEqual(['d1']);
  });

  test('removed before or after the move, an item matches nothing; a pending item never reaches FTS5 once removed', async () => {
    const h = await open('sqlite');
    const lex = createLexicalIndex(h);
    await h.db.transaction().execute(async (trx) => {
      for (const [id, text] of DOCS) await lex.put(trx, 'c', 'alice', id, text);
    });
    await lex.settle();
    await h.db.transaction().execute(async (trx) => {
      await lex.put(trx, 'c', 'alice', 'd6', 'a new note on the lisbon office keyboard');
      await lex.put(trx, 'c', 'alice', 'd4', 'Flight to Lisbon departs Wednesday');
    });
    await h.db.transaction().execute((trx) => lex.remove(trx, 'c', 'alice', ['d6', 'd4', 'd2']));
    expect(await pendingRows(h)).toEqual([]);
    expect(await lex.query('c', 'alice', 'lisbon keyboard thunderstorms', 10)).toEqual([]);
    await lex.settle();
    expect(await lex.query('c', 'alice', 'lisbon keyboard thunderstorms', 10)).toEqual([]);
    const fts = await sql<{ n: number }>`select count(*) as n from lexical_fts where lexical_fts match ${`"${ownerTag('c', 'alice')}lisbon"`}`.execute(h.db);
    expect(Number(fts.rows[0]!.n)).toBe(0);
  });

  test('moves on its own, in batches, and what a crash left waiting is moved after a restart', async () => {
    const h = await open('sqlite');
    const lex = createLexicalIndex(h);
    const n = FLUSH_BATCH + 10;
    await h.db.transaction().execute(async (trx) => {
      for (let i = 0; i < n; i++) await lex.put(trx, 'c', 'erin', `e${i}`, `status report ${i} of the kiwi harvest`);
    });
    await vi.waitFor(async () => expect(await pendingRows(h)).toEqual([]), { timeout: 10_000, interval: 50 });
    expect(await lex.query('c', 'erin', 'kiwi', 5)).toHaveLength(5);
    const fts = await sql<{ n: number }>`select count(*) as n from lexical_fts where lexical_fts match ${`"${ownerTag('c', 'erin')}kiwi"`}`.execute(h.db);
    expect(Number(fts.rows[0]!.n)).toBe(n);

    // A row as a process that stopped before its flush leaves it (written here without an index that
    // would move it): found by search from the row, moved by the next index started.
    const e0 = await h.db.selectFrom('lexical_docs').select('id').where('owner_id', '=', 'erin').where('item_id', '=', 'e0').executeTakeFirstOrThrow();
    const tag = ownerTag('c', 'erin');
    await h.db.updateTable('lexical_docs').set({ doc_len: 3, pending_terms: `${tag}fig ${tag}harvest ${tag}report ` }).where('id', '=', e0.id).execute();
    await new Promise((r) => setTimeout(r, 300));
    expect((await pendingRows(h)).map((r) => r.item_id)).toEqual(['e0']);
    expect(ids(await lex.query('c', 'erin', 'fig', 5))).toEqual(['e0']);
    const again = createLexicalIndex(h);
    await vi.waitFor(async () => expect(await pendingRows(h)).toEqual([]), { timeout: 10_000, interval: 50 });
    expect(ids(await again.query('c', 'erin', 'fig', 5))).toEqual(['e0']);
    expect(ids(await again.query('c', 'erin', 'kiwi', n)).includes('e0')).toBe(false);
  });
});
