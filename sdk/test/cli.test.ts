/**
 * The `svc` command end to end: each command a spawned process (sdk/bin/svc.mjs, as `npx svc` runs
 * it) against a real svc (in process, SQLite, loopback) behind a recording proxy, with its own HOME.
 * Covers register (the keypair made and kept locally, the private key never sent), memory, blobs
 * with progress on a terminal only, parse, search and browse against loopback fakes, billing,
 * passports, the directory, the settings' precedence and the exit codes.
 */
import { execFile, execFileSync, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import { createHash, createPrivateKey, createPublicKey } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startBraveFake, type FakeSearchProvider } from '../../test/fakes/search-providers';
import { createSvcClient, ok } from '../src/index';
import { startSvc, type Svc } from './svc-server';

const BIN = fileURLToPath(new URL('../bin/svc.mjs', import.meta.url));

let svc: Svc;
let brave: FakeSearchProvider;
let site: Server;
let sitePort: number;
let home: string;
let cwd: string;

interface Run { code: number | null; stdout: string; stderr: string; stdoutBytes: Buffer }

/** Runs `svc args…` with HOME set to the test's own directory and SVC_URL to the test svc. */
function svcCli(args: string[], opts: { env?: Record<string, string | undefined>; input?: string | Buffer; home?: string } = {}): Promise<Run> {
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !k.startsWith('SVC_') && k !== 'XDG_CONFIG_HOME') env[k] = v;
  Object.assign(env, { HOME: opts.home ?? home, SVC_URL: svc.url });
  for (const [k, v] of Object.entries(opts.env ?? {})) {
    if (v === undefined) delete env[k];
    else env[k] = v;
  }
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env, cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout.on('data', (d: Buffer) => out.push(d));
    child.stderr.on('data', (d: Buffer) => err.push(d));
    child.on('error', reject);
    child.on('close', (code) => {
      const stdoutBytes = Buffer.concat(out);
      resolve({ code, stdout: stdoutBytes.toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), stdoutBytes });
    });
    child.stdin.end(opts.input ?? '');
  });
}

const json = (r: Run): any => {
  try {
    return JSON.parse(r.stdout);
  } catch {
    throw new Error(`not JSON (exit ${r.code}):\n${r.stdout}\n${r.stderr}`);
  }
};
const configFile = () => join(home, '.config', 'svc', 'config.json');
const readConfig = () => JSON.parse(readFileSync(configFile(), 'utf8')) as Record<string, string>;

const PAGE = `<!doctype html><html lang="en"><head><title>Field notes on tide pools</title></head><body><article><h1>Field notes on tide pools</h1>${
  '<p>Tide pools hold anemones, sea stars and small fish between the tides; each visit we counted what we saw and where.</p>'.repeat(6)}</article></body></html>`;

beforeAll(async () => {
  site = createServer((req, res) => {
    if (req.url === '/robots.txt') res.writeHead(404).end();
    else res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(PAGE);
  });
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
  sitePort = (site.address() as AddressInfo).port;
  brave = await startBraveFake({ apiKey: 'brave-key' });
  svc = await startSvc({
    SVC_SEARCH_PRIMARY: 'brave', SVC_BRAVE_API_KEY: 'brave-key', SVC_BRAVE_URL: brave.url, SVC_SEARCH_CACHE: 'off',
    SVC_OUTBOUND_ALLOW_LOOPBACK: 'true', SVC_OUTBOUND_ALLOWED_PORTS: `80,443,${sitePort}`, SVC_ROBOTS_CACHE_SECONDS: '0',
  });
  home = mkdtempSync(join(tmpdir(), 'svc-cli-home-'));
  cwd = join(home, 'work');
  mkdirSync(cwd);
}, 120_000);
afterAll(async () => {
  await svc?.close();
  await brave?.close();
  site?.close();
  if (home) rmSync(home, { recursive: true, force: true });
});

describe('svc register', () => {
  test('refused without --agree-to-terms (2, nothing sent, no key left); then registered: key pair made here, private key in keys/<agent_id>.pem (0600), never sent; API key in the config file (0600); a second register refused', async () => {
    const refused = await svcCli(['register', 'cli-agent', '--owner', 'cli@example.test']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--agree-to-terms');
    expect(refused.stderr).toContain(`${svc.url}/terms`);
    expect(svc.requests.filter((r) => r.url === '/v1/register')).toHaveLength(0);
    expect(existsSync(join(home, '.config', 'svc', 'keys')) ? readdirSync(join(home, '.config', 'svc', 'keys')) : []).toEqual([]);

    const r = await svcCli(['register', 'cli-agent', '--owner', 'cli@example.test', '--agree-to-terms']);
    expect(r.code, r.stderr).toBe(0);
    const conf = readConfig();
    expect(Object.keys(conf).sort()).toEqual(['agent_id', 'agent_name', 'api_key', 'passport_key_file', 'url']);
    expect(conf).toMatchObject({ url: svc.url, agent_name: 'cli-agent', passport_key_file: `keys/${conf.agent_id}.pem` });
    expect(conf.api_key).toMatch(/^svc_/);
    expect(r.stdout).toContain(conf.agent_id);
    expect(r.stdout).not.toContain(conf.api_key);
    const keyFile = join(home, '.config', 'svc', 'keys', `${conf.agent_id}.pem`);
    expect(statSync(configFile()).mode & 0o777).toBe(0o600);
    expect(statSync(keyFile).mode & 0o777).toBe(0o600);
    expect(statSync(join(home, '.config', 'svc')).mode & 0o777).toBe(0o700);
    expect(readdirSync(join(home, '.config', 'svc', 'keys'))).toEqual([`${conf.agent_id}.pem`]);

    // The key svc holds is the public half of the local key; the private key went nowhere.
    const pem = readFileSync(keyFile, 'utf8');
    const publicPem = createPublicKey(createPrivateKey(pem)).export({ type: 'spki', format: 'pem' }).toString();
    const passport = await ok(createSvcClient({ baseUrl: svc.url }).GET('/v1/agents/{agent_id}/passport', { params: { path: { agent_id: conf.agent_id } } }));
    expect(passport.passport.public_key.trim()).toBe(publicPem.trim());
    const sent = svc.requests.filter((q) => q.url === '/v1/register');
    expect(sent).toHaveLength(1);
    const body = JSON.parse(sent[0].body) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(['agent_name', 'agree_to_terms', 'owner_identifier', 'passport_public_key', 'registration_source']);
    const secret = pem.split('\n')[1];
    for (const q of svc.requests) expect(JSON.stringify(q)).not.toContain(secret);

    const again = await svcCli(['register', 'cli-agent-2', '--owner', 'cli@example.test', '--agree-to-terms']);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('--force');
    expect(readConfig().agent_id).toBe(conf.agent_id);
  }, 120_000);
});

describe('settings and exit codes', () => {
  test('flags over the environment over the file; the key masked in config show; 3 without a key, 5 for a wrong one, 7 for no svc, 2 for a bad option', async () => {
    const conf = readConfig();
    const [shown, flagWins, envWins, deadUrl, noKey, badOption, help] = await Promise.all([
      svcCli(['config', 'show', '--json']),
      // The environment holds the right key, the flag a wrong one: the flag wins (401 → 5).
      svcCli(['me', '--api-key', 'svc_wrong', '--json'], { env: { SVC_API_KEY: conf.api_key } }),
      // The file holds the right key, the environment a wrong one: the environment wins.
      svcCli(['me'], { env: { SVC_API_KEY: 'svc_wrong' } }),
      // The environment names the svc, the flag a port where nothing listens.
      svcCli(['me', '--url', 'http://127.0.0.1:9']),
      svcCli(['me'], { env: { SVC_CONFIG: join(home, 'none.json') } }),
      svcCli(['memory', 'list', '--per-page', '500']),
      svcCli(['--help']),
    ]);
    expect(shown.code).toBe(0);
    expect(json(shown)).toMatchObject({ config_file: configFile(), url: svc.url, url_from: 'env', api_key_from: 'file', agent_id: conf.agent_id });
    expect(shown.stdout).not.toContain(conf.api_key);
    expect(flagWins.code).toBe(5);
    expect(JSON.parse(flagWins.stderr)).toMatchObject({ error: { exit_code: 5, status: 401, error_code: 'INVALID_API_KEY' } });
    expect(flagWins.stdout).toBe('');
    expect(envWins.code).toBe(5);
    expect(envWins.stderr).toMatch(/^svc: INVALID_API_KEY: .*\(HTTP 401\)/);
    expect(deadUrl.code).toBe(7);
    expect(deadUrl.stderr).toContain('cannot reach svc at http://127.0.0.1:9');
    expect(noKey.code).toBe(3);
    expect(noKey.stderr).toContain('no API key');
    expect(badOption.code).toBe(2);
    expect(badOption.stderr).toContain('--per-page');
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Exit codes');
    // No config file at all: the key from the flag is enough.
    const good = await svcCli(['me', '--json', '--api-key', conf.api_key], { env: { SVC_CONFIG: join(home, 'none.json') } });
    expect(json(good).agent_id).toBe(conf.agent_id);
  }, 120_000);
});

describe('svc memory', () => {
  test('put (JSON, text, standard input), get, list, search; --json for scripts; 6 for a missing key, 4 for a stale If-Match', async () => {
    const puts = await Promise.all([
      svcCli(['memory', 'put', 'profile', '{"city":"Lyon","langs":["fr","en"]}', '--importance', 'high']),
      svcCli(['memory', 'put', 'note', 'the heron stood in the shallow water']),
      svcCli(['memory', 'put', 'raw', '-', '--string'], { input: '{"not":"parsed"}\n' }),
    ]);
    for (const p of puts) expect(p.code, p.stderr).toBe(0);
    expect(puts[0].stdout).toMatch(/│ key\s+│ profile/);
    const [got, value, raw, list, all, search, missing, stale] = await Promise.all([
      svcCli(['memory', 'get', 'profile', '--json']),
      svcCli(['memory', 'get', 'note', '--value']),
      svcCli(['memory', 'get', 'raw', '--value']),
      svcCli(['memory', 'list']),
      svcCli(['memory', 'list', '--all', '--per-page', '2', '--json']),
      svcCli(['memory', 'search', 'heron in water']),
      svcCli(['memory', 'get', 'nothing-here']),
      svcCli(['memory', 'put', 'profile', '1', '--if-match', '9']),
    ]);
    expect(json(got)).toMatchObject({ key: 'profile', value: { city: 'Lyon', langs: ['fr', 'en'] }, importance: 'high', version: 1 });
    expect(JSON.parse(value.stdout)).toBe('the heron stood in the shallow water');
    expect(JSON.parse(raw.stdout)).toBe('{"not":"parsed"}');
    expect(list.code).toBe(0);
    for (const k of ['profile', 'note', 'raw']) expect(list.stdout).toContain(k);
    expect(list.stdout).toMatch(/│ key\s+│ version\s+│ bytes/);
    expect(json(all).map((k: { key: string }) => k.key).sort()).toEqual(['note', 'profile', 'raw']);
    expect(search.code, search.stderr).toBe(0);
    expect(search.stdout).toContain('note');
    expect(search.stdout).toContain('the heron stood');
    expect(missing.code).toBe(6);
    expect(missing.stderr).toContain('MEMORY_KEY_NOT_FOUND');
    expect(stale.code).toBe(4);
    expect(stale.stderr).toContain('MEMORY_LEDGER_VERSION_CONFLICT');
    const putSent = svc.requests.filter((r) => r.method === 'PUT' && r.url === '/v1/memory/profile');
    expect(putSent[putSent.length - 1].headers['if-match']).toBe('"9"');
  }, 120_000);
});

describe('svc blob', () => {
  test('upload, list, download (the file\'s own name, checked; refuses to overwrite; - to standard output), parse to completion, --text; no progress drawn into pipes', async () => {
    const csv = 'city,visits\nLyon,3\nOslo,5\n';
    writeFileSync(join(cwd, 'visits.csv'), csv);
    const up = await svcCli(['blob', 'upload', 'visits.csv', '--json']);
    expect(up.code, up.stderr).toBe(0);
    const blob = json(up);
    expect(blob).toMatchObject({ content_type: 'text/csv', size_bytes: csv.length, created: true, sha256: createHash('sha256').update(csv).digest('hex') });
    expect(up.stderr).toBe('');
    rmSync(join(cwd, 'visits.csv'));

    const [list, download, toStdout] = await Promise.all([
      svcCli(['blob', 'list']),
      svcCli(['blob', 'download', blob.blob_id]),
      svcCli(['blob', 'download', blob.blob_id, '-o', '-']),
    ]);
    expect(list.stdout).toContain(blob.blob_id);
    expect(list.stdout).toContain('visits.csv');
    expect(download.code, download.stderr).toBe(0);
    expect(download.stderr).toBe('');
    expect(download.stdout).toContain('(verified)');
    expect(readFileSync(join(cwd, 'visits.csv'), 'utf8')).toBe(csv);
    expect(toStdout.stdout).toBe(csv);
    const again = await svcCli(['blob', 'download', blob.blob_id]);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('--force');

    const [parsed, text] = await Promise.all([
      svcCli(['blob', 'parse', blob.blob_id]),
      svcCli(['blob', 'parse', blob.blob_id, '--sync', '--text']),
    ]);
    expect(parsed.code, parsed.stderr).toBe(0);
    expect(parsed.stdout).toMatch(/│ status\s+│ complete/);
    expect(parsed.stdout).toMatch(/│ mode\s+│ async/);
    expect(parsed.stderr).toBe('');
    expect(text.stdout).toBe('city | visits\nLyon | 3\nOslo | 5\n');
  }, 120_000);

  test('a broken file parses as failed: exit 8 with the reason; an unknown blob: 6', async () => {
    writeFileSync(join(cwd, 'broken.pdf'), 'not a pdf');
    const up = json(await svcCli(['blob', 'upload', 'broken.pdf', '--json']));
    const [failed, unknown] = await Promise.all([
      svcCli(['blob', 'parse', up.blob_id]),
      svcCli(['blob', 'parse', 'b_0000000000000000']),
    ]);
    expect(failed.code).toBe(8);
    expect(failed.stdout).toMatch(/│ status\s+│ failed/);
    expect(failed.stderr).toContain('the parse failed (corrupt)');
    expect(unknown.code).toBe(6);
    expect(unknown.stderr).toContain('BLOB_NOT_FOUND');
  }, 120_000);

  test.skipIf(!hasScript())('on a terminal (a pty from script(1)): a progress bar for the upload and the download, the parse\'s status line, each erased when done', async () => {
    const bytes = Buffer.alloc(6 * 1024 * 1024, 7);
    writeFileSync(join(cwd, 'big.bin'), bytes);
    const conf = readConfig();
    const env = { ...process.env, HOME: home, SVC_URL: svc.url, COLUMNS: '100' };
    // Asynchronous: svc runs in this process and must keep answering while the command runs.
    const inTty = async (cmd: string) => (await promisify(execFile)('script', ['-qec', cmd, '/dev/null'], { cwd, env, encoding: 'latin1', timeout: 60_000 })).stdout;
    const q = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
    const node = `${q(process.execPath)} ${q(BIN)}`;
    const up = await inTty(`${node} blob upload big.bin`);
    expect(up).toMatch(/\rupload big\.bin \[#{24}\] 100%  6\.0 MiB \/ 6\.0 MiB/);
    expect(up).toContain('\r\x1b[K');
    const id = /b_[0-9a-f]{16}/.exec(up)![0];
    rmSync(join(cwd, 'big.bin'));
    const down = await inTty(`${node} blob download ${id}`);
    expect(down).toMatch(new RegExp(`\\rdownload ${id} \\[#{24}\\] 100%`));
    expect(readFileSync(join(cwd, 'big.bin')).equals(bytes)).toBe(true);
    writeFileSync(join(cwd, 't.csv'), 'a,b\n1,2\n');
    const csvId = json(await svcCli(['blob', 'upload', 't.csv', '--json'])).blob_id as string;
    const parsed = await inTty(`${node} blob parse ${csvId}`);
    expect(parsed).toMatch(new RegExp(`\\rparse ${csvId} (queued|running|complete)  \\d+\\.\\d s`));
    expect(conf.agent_id).toBeTruthy();
  }, 120_000);
});

function hasScript(): boolean {
  try {
    execFileSync('script', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

describe('svc search, browse, billing, passport, agents', () => {
  test('search: a table of results with credibility (from the loopback Brave fake); browse: title, metadata and text of a loopback page; a refused URL: 4', async () => {
    const [search, searchJson, browse, text, refused] = await Promise.all([
      svcCli(['search', 'tide pools', '-n', '3']),
      svcCli(['search', 'tide pools', '--num', '2', '--json']),
      svcCli(['browse', `http://127.0.0.1:${sitePort}/notes`]),
      svcCli(['browse', `http://127.0.0.1:${sitePort}/notes`, '--text']),
      svcCli(['browse', 'ftp://127.0.0.1/notes']),
    ]);
    expect(search.code, search.stderr).toBe(0);
    expect(search.stdout).toMatch(/│ title\s+│ url\s+│ credibility\s+│ published/);
    expect(search.stdout).toContain('tide pools & more: result 1');
    expect(json(searchJson).results).toHaveLength(2);
    expect(brave.log.map((l) => l.q)).toContain('tide pools');
    expect(browse.code, browse.stderr).toBe(0);
    expect(browse.stdout).toMatch(/│ title\s+│ Field notes on tide pools/);
    expect(browse.stdout).toContain('Tide pools hold anemones');
    expect(text.stdout.startsWith('Tide pools hold anemones')).toBe(true);
    expect(refused.code).toBe(4);
    expect(refused.stderr).toMatch(/^svc: [A-Z_]+: .*\(HTTP 4\d\d\)\n$/);
  }, 120_000);

  test('billing; passport (own by default, any by id); passport session signs with the local key and its token works; agents lists the directory', async () => {
    const conf = readConfig();
    const other = await ok(createSvcClient({ baseUrl: svc.url }).POST('/v1/register', {
      body: { agent_name: 'listed-one', owner_identifier: 'o@example.test', agree_to_terms: true },
    }));
    await ok(createSvcClient({ baseUrl: svc.url, apiKey: other.api_key }).POST('/v1/agents/passport/description', { body: { listed: true, bio: 'I map tide pools.' } }));
    const [billing, mine, theirs, session, agents, agentsJson] = await Promise.all([
      svcCli(['billing']),
      svcCli(['passport']),
      svcCli(['passport', 'show', other.agent_id, '--json']),
      svcCli(['passport', 'session', '--json']),
      svcCli(['agents']),
      svcCli(['agents', '--all', '--limit', '1', '--json']),
    ]);
    expect(billing.code, billing.stderr).toBe(0);
    expect(billing.stdout).toMatch(/│ tier\s+│ free/);
    expect(billing.stdout).toMatch(/│ memory_ops_this_month\s+│ \d+/);
    expect(mine.stdout).toContain(`did:svc:${conf.agent_id}`);
    expect(json(theirs).passport.agent_id).toBe(other.agent_id);
    expect(session.code, session.stderr).toBe(0);
    const token = json(session).session_token as string;
    expect(token).toMatch(/^svc_session_/);
    const me = await svcCli(['me', '--json'], { env: { SVC_API_KEY: token } });
    expect(json(me)).toMatchObject({ agent_id: conf.agent_id, authenticated_with: { kind: 'session' } });
    expect(agents.stdout).toContain('listed-one');
    expect(agents.stdout).toContain('I map tide pools.');
    expect(json(agentsJson).map((a: { agent_id: string }) => a.agent_id)).toEqual([other.agent_id]);
    // The passport key never left: no request carried it.
    const secret = readFileSync(join(home, '.config', 'svc', conf.passport_key_file), 'utf8').split('\n')[1];
    for (const q of svc.requests) expect(JSON.stringify(q)).not.toContain(secret);
  }, 120_000);
});
