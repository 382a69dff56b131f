/**
 * `svc`: the command line on the SDK. Tables for people, --json for scripts; settings from flags,
 * then SVC_URL / SVC_API_KEY, then the config file (sdk/src/cli/config.ts); exit codes in
 * sdk/src/cli/exit.ts and sdk/README.md.
 */
import { existsSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { Argument, Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { createSvcClient, ok, SDK_VERSION, SvcError, type JsonBody, type SvcClient } from './client';
import { generatePassportKeys, passportSession } from './passport';
import { parseBlob, type ParseRecord } from './parse';
import { blobs as blobPages, collect, directory, directoryPages, memoryKeys, type BlobItem, type DirectoryAgent, type DirectoryPage, type MemoryKeyItem } from './pages';
import { downloadBlob, safeFilename, uploadBlob } from './blobs';
import { resolveConfig, writeConfigFile, writeSecretFile, type ConfigFile, type Resolved, CONFIG_FIELDS } from './cli/config';
import { CliError, EXIT, exitCodeOf, messageOf } from './cli/exit';
import { cell, Printer } from './cli/output';
import { progressLine } from './cli/progress';

interface GlobalOpts {
  url?: string;
  apiKey?: string;
  config?: string;
  json?: boolean;
  progress?: boolean;
}

interface Io {
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
  stdin: NodeJS.ReadStream;
  env: NodeJS.ProcessEnv;
}

const IMPORTANCE = ['critical', 'high', 'normal', 'low'] as const;
type Importance = (typeof IMPORTANCE)[number];

const int = (min: number, max: number) => (v: string): number => {
  const n = Number(v);
  if (!/^-?\d+$/.test(v.trim()) || n < min || n > max) throw new InvalidArgumentError(`a whole number from ${min} to ${max}, please`);
  return n;
};
const fraction = (v: string): number => {
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n < 0 || n > 1) throw new InvalidArgumentError('a number from 0 to 1, please');
  return n;
};

/** One command's context: settings, a client, a printer. */
class Ctx {
  readonly conf: Resolved;
  /** The URL of the last command's context, for messages about reaching it. */
  static lastUrl: string | undefined;
  readonly print: Printer;
  readonly opts: GlobalOpts;
  private clientCache?: SvcClient;
  constructor(readonly io: Io, cmd: Command) {
    this.opts = cmd.optsWithGlobals<GlobalOpts>();
    this.conf = resolveConfig({ url: this.opts.url, apiKey: this.opts.apiKey, config: this.opts.config }, io.env);
    Ctx.lastUrl = this.conf.url;
    for (const w of this.conf.warnings) io.stderr.write(`svc: warning: ${w}\n`);
    this.print = new Printer(io.stdout, !!this.opts.json);
  }
  get json(): boolean {
    return !!this.opts.json;
  }
  /** A client without a key (public routes). */
  anonymous(): SvcClient {
    return createSvcClient({ baseUrl: this.conf.url });
  }
  /** A client with the API key; exit 3 without one. */
  client(): SvcClient {
    if (!this.conf.apiKey) throw new CliError(EXIT.config, `no API key: run \`svc register\`, or set SVC_API_KEY or --api-key (config file: ${this.conf.configPath})`);
    return (this.clientCache ??= createSvcClient({ baseUrl: this.conf.url, apiKey: this.conf.apiKey }));
  }
  progress(label: string) {
    return progressLine(this.io.stderr, label, { enabled: this.opts.progress !== false });
  }
  /** --json: the value; otherwise the table `human` draws. */
  show(value: unknown, human: () => void): void {
    if (this.json) this.print.printJson(value);
    else human();
  }
}

async function readStdin(stdin: NodeJS.ReadStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stdin) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(String(c)));
  return Buffer.concat(chunks).toString('utf8');
}

/** A memory value from the command line: JSON when it parses as JSON, else the text as a string. */
export function memoryValue(text: string, asString: boolean): unknown {
  if (asString) return text;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

/** Table columns: [header, field or getter]. */
type Columns<T> = Array<[string, keyof T | ((item: T) => unknown)]>;

const quoteEtag = (v: string) => (v === '*' || v.startsWith('"') || v.startsWith('W/') ? v : `"${v}"`);

export function buildProgram(io: Io): Command {
  const program = new Command('svc');
  const run = <A extends unknown[]>(fn: (ctx: Ctx, ...args: A) => Promise<void>) => async (...args: A) => {
    const cmd = args[args.length - 1] as Command;
    await fn(new Ctx(io, cmd), ...args);
  };

  program
    .description('Command line for svc: identity, memory, blobs, search, browsing, billing and passports')
    .version(SDK_VERSION, '-V, --version')
    .option('--url <url>', 'svc\'s address (env SVC_URL; default http://127.0.0.1:3000)')
    .option('--api-key <key>', 'API key or session token (env SVC_API_KEY)')
    .option('--config <file>', 'config file (env SVC_CONFIG; default ~/.config/svc/config.json)')
    .option('--json', 'print svc\'s answer as JSON (for scripts)')
    .option('--no-progress', 'no progress line on the terminal')
    .showHelpAfterError('(svc --help lists the commands)')
    .configureOutput({ writeOut: (s) => io.stdout.write(s), writeErr: (s) => io.stderr.write(s) })
    .exitOverride()
    .addHelpText('after', `
Settings: flags, then the environment (SVC_URL, SVC_API_KEY, SVC_CONFIG), then the config file
written by \`svc register\` (mode 0600). Exit codes: 0 ok, 1 unexpected failure, 2 usage, 3 not
configured, 4 refused by svc (4xx), 5 authentication or permission (401/403), 6 not found (404),
7 svc unreachable or failing (5xx), 8 parse failed or timed out.`);

  // ---- register, me ----
  program.command('register')
    .description('register an agent: makes an Ed25519 passport keypair here (the private key stays in the config directory) and saves the API key to the config file')
    .argument('<agent_name>', 'letters, digits, - and _ (1 to 64)')
    .requiredOption('--owner <owner_identifier>', 'a stable identifier of the owner, e.g. an email address')
    .option('--agree-to-terms', 'you accept svc\'s terms (GET /terms)')
    .option('--force', 'register even though the config file already holds an agent (its key file stays)')
    .action(run(async (ctx, agentName: string, o: { owner: string; agreeToTerms?: boolean; force?: boolean }) => {
      const { conf } = ctx;
      if (conf.file.api_key && !o.force) {
        throw new CliError(EXIT.usage, `${conf.configPath} already holds agent ${conf.file.agent_name ?? ''} (${conf.file.agent_id ?? 'unknown id'}): pass --force to replace it there (its passport key file stays), or --config for another file`);
      }
      if (!o.agreeToTerms) throw new CliError(EXIT.usage, `registering means accepting svc's terms: read ${conf.url}/terms, then pass --agree-to-terms`);
      const keys = generatePassportKeys();
      const keysDir = join(conf.configPath, '..', 'keys');
      const pending = join(keysDir, `pending-${randomBytes(6).toString('hex')}.pem`);
      writeSecretFile(pending, keys.privateKeyPem);
      let reg: JsonBody<'/v1/register', 'post', 201>;
      try {
        reg = await ok(ctx.anonymous().POST('/v1/register', {
          body: { agent_name: agentName, owner_identifier: o.owner, agree_to_terms: true, passport_public_key: keys.publicKeyPem, registration_source: 'svc-cli' },
        }));
      } catch (e) {
        rmSync(pending, { force: true });
        throw e;
      }
      const agentId = reg.agent_id;
      const keyFile = join(keysDir, `${agentId}.pem`);
      renameSync(pending, keyFile);
      const next: ConfigFile = { ...conf.file, url: conf.url, api_key: reg.api_key, agent_id: agentId, agent_name: reg.agent_name, passport_key_file: join('keys', `${agentId}.pem`) };
      writeConfigFile(conf.configPath, next);
      ctx.show(reg, () => {
        ctx.print.record({
          agent_id: agentId, agent_name: reg.agent_name, did: reg.passport.did, tier: reg.tier,
          api_key: `saved in ${conf.configPath}`, passport_key: `${keyFile} (private; never sent)`,
        });
        ctx.print.line(`Registered. Try: svc me, svc memory put greeting '"hello"', svc passport session`);
      });
    }));

  program.command('me')
    .description('the authenticated agent (GET /v1/me)')
    .action(run(async (ctx) => {
      const me = await ok(ctx.client().GET('/v1/me'));
      ctx.show(me, () => ctx.print.record(me));
    }));

  // ---- memory ----
  const memory = program.command('memory').description('per-agent JSON memory: put, get, list, search, delete');
  memory.command('put')
    .description('store a value under a key (JSON when it parses as JSON, else a string; - reads standard input)')
    .argument('<key>', '1 to 128 characters of [a-zA-Z0-9._:-]')
    .argument('[value]', 'the value; omit with --file, or - for standard input')
    .option('--file <path>', 'read the value from a file')
    .option('--string', 'store the text as a string even when it is valid JSON')
    .option('--ttl <seconds>', 'expire after this many seconds', int(1, 315576000))
    .addOption(new Option('--importance <level>', 'importance').choices(IMPORTANCE))
    .option('--source <text>', 'provenance label')
    .option('--confidence <0..1>', 'confidence, 0 to 1', fraction)
    .option('--if-match <version>', 'write only over this live version (or *)')
    .action(run(async (ctx, key: string, valueArg: string | undefined, o: { file?: string; string?: boolean; ttl?: number; importance?: Importance; source?: string; confidence?: number; ifMatch?: string }) => {
      if ((valueArg === undefined) === (o.file === undefined)) throw new CliError(EXIT.usage, 'give the value as an argument (- for standard input) or with --file, not both');
      let text: string;
      try {
        text = o.file !== undefined ? readFileSync(o.file, 'utf8') : valueArg === '-' ? await readStdin(ctx.io.stdin) : valueArg!;
      } catch (e) {
        throw new CliError(EXIT.usage, `cannot read ${o.file}: ${(e as Error).message}`);
      }
      const body = {
        value: memoryValue(o.file !== undefined || valueArg === '-' ? text.replace(/\n$/, '') : text, !!o.string),
        ...(o.ttl !== undefined ? { ttl: o.ttl } : {}),
        ...(o.importance ? { importance: o.importance } : {}),
        ...(o.source !== undefined ? { source: o.source } : {}),
        ...(o.confidence !== undefined ? { confidence: o.confidence } : {}),
      };
      const res = await ok(ctx.client().PUT('/v1/memory/{key}', {
        params: { path: { key }, ...(o.ifMatch ? { header: { 'if-match': quoteEtag(o.ifMatch) } } : {}) },
        body,
      }));
      ctx.show(res, () => ctx.print.record({ key: res.key, version: res.version, expires_at: res.expires_at, ops_remaining: res.usage.ops_remaining }));
    }));
  memory.command('get')
    .description('read the latest value of a key')
    .argument('<key>')
    .option('--value', 'print only the value, as JSON')
    .action(run(async (ctx, key: string, o: { value?: boolean }) => {
      const res = await ok(ctx.client().GET('/v1/memory/{key}', { params: { path: { key } } }));
      if (o.value) return ctx.print.printJson(res.value);
      ctx.show(res, () => ctx.print.record({ ...res, value: JSON.stringify(res.value, null, 2) }, { omit: ['status', 'usage'] }));
    }));
  memory.command('list')
    .description('list keys (metadata only, never values)')
    .option('--prefix <prefix>', 'only keys starting with this')
    .addOption(new Option('--importance <level>', 'only this importance').choices(IMPORTANCE))
    .option('--page <n>', 'page number', int(1, 1000000))
    .option('--per-page <n>', 'keys per page, 1 to 100', int(1, 100))
    .option('--all', 'every key, page after page')
    .action(run(async (ctx, o: { prefix?: string; importance?: Importance; page?: number; perPage?: number; all?: boolean }) => {
      const query = { ...(o.prefix !== undefined ? { prefix: o.prefix } : {}), ...(o.importance ? { importance: o.importance } : {}), ...(o.perPage ? { per_page: o.perPage } : {}) };
      const columns: Columns<MemoryKeyItem> = [['key', 'key'], ['version', 'version'], ['bytes', 'size_bytes'], ['importance', 'importance'], ['updated_at', 'updated_at'], ['expires_at', 'expires_at']];
      if (o.all) {
        const keys = await collect(memoryKeys(ctx.client(), query));
        return ctx.show(keys, () => ctx.print.rows(keys, columns, { empty: '(no keys)' }));
      }
      const res = await ok(ctx.client().GET('/v1/memory', { params: { query: { ...query, ...(o.page ? { page: o.page } : {}) } } }));
      ctx.show(res, () => pageFooter(ctx, res, res.keys, columns, '(no keys)'));
    }));
  memory.command('search')
    .description('semantic search over your memories')
    .argument('<query>')
    .option('--limit <n>', 'results, 1 to 20', int(1, 20))
    .option('--threshold <0..1>', 'least similarity', fraction)
    .addOption(new Option('--importance <level>', 'only this importance').choices(IMPORTANCE))
    .action(run(async (ctx, q: string, o: { limit?: number; threshold?: number; importance?: Importance }) => {
      const res = await ok(ctx.client().GET('/v1/memory/search', {
        params: { query: { q, ...(o.limit ? { limit: o.limit } : {}), ...(o.threshold !== undefined ? { threshold: o.threshold } : {}), ...(o.importance ? { importance: o.importance } : {}) } },
      }));
      ctx.show(res, () => {
        ctx.print.rows(res.results, [['key', 'key'], ['similarity', 'similarity'], ['importance', 'importance'], ['value', 'value']], { empty: '(no memory matched)' });
        if (res.pending_embeddings > 0) ctx.print.line(`${res.pending_embeddings} memories are still being indexed; they are found by their words meanwhile`);
      });
    }));
  memory.command('delete')
    .description('delete a key')
    .argument('<key>')
    .action(run(async (ctx, key: string) => {
      const res = await ok(ctx.client().DELETE('/v1/memory/{key}', { params: { path: { key } } }));
      ctx.show(res, () => ctx.print.record(res, { omit: ['status', 'usage'] }));
    }));

  // ---- blobs ----
  const blob = program.command('blob').description('files: upload, download, parse, list, delete');
  blob.command('upload')
    .description('upload a file (streamed, with a progress bar on a terminal)')
    .argument('<file>')
    .option('--content-type <type>', 'media type (default: by the file\'s extension)')
    .option('--filename <name>', 'the name svc keeps (default: the file\'s name)')
    .action(run(async (ctx, file: string, o: { contentType?: string; filename?: string }) => {
      if (!existsSync(file)) throw new CliError(EXIT.usage, `no such file: ${file}`);
      const client = ctx.client();
      const bar = ctx.progress(`upload ${o.filename ?? file}`);
      let res;
      try {
        res = await uploadBlob(client, { path: file, filename: o.filename, contentType: o.contentType, onProgress: (d, t) => bar.bytes(d, t) });
      } finally {
        bar.done();
      }
      ctx.show(res, () => ctx.print.record({ ...res, created: res.created ? 'new blob' : 'already stored (same bytes)' }, { omit: ['status'] }));
    }));
  blob.command('download')
    .description('download a blob (streamed, checked against its SHA-256, with a progress bar on a terminal)')
    .argument('<blob_id>')
    .option('-o, --output <path>', 'file to write, or - for standard output (default: the blob\'s file name, else its id)')
    .option('--force', 'replace an existing file')
    .action(run(async (ctx, blobId: string, o: { output?: string; force?: boolean }) => {
      const client = ctx.client();
      let target = o.output;
      if (target === undefined) {
        const meta = await ok(client.GET('/v1/blobs/{blob_id}/meta', { params: { path: { blob_id: blobId } } }));
        target = safeFilename(meta.filename) ?? blobId;
      }
      if (target !== '-' && existsSync(target) && !o.force) throw new CliError(EXIT.usage, `${target} exists: pass --force to replace it, or -o another path`);
      const bar = ctx.progress(`download ${blobId}`);
      let res;
      try {
        res = await downloadBlob(client, blobId, target === '-' ? ctx.io.stdout : target, { onProgress: (d, t) => bar.bytes(d, t) });
      } finally {
        bar.done();
      }
      if (target === '-') return;
      ctx.show({ blob_id: blobId, ...res }, () => ctx.print.record({ blob_id: blobId, path: res.path, bytes: res.bytes, content_type: res.contentType, sha256: `${res.sha256} (verified)` }));
    }));
  blob.command('parse')
    .description('parse a PDF, DOCX, CSV or XLSX blob: queued and followed until done (status on a terminal), or --sync')
    .argument('<blob_id>')
    .option('--sync', 'parse in the request instead of queueing')
    .option('--no-wait', 'queue it and print the queued parse')
    .option('--timeout <seconds>', 'give up waiting after this long (default 600)', int(1, 86400))
    .option('--text', 'print only the extracted text')
    .action(run(async (ctx, blobId: string, o: { sync?: boolean; wait?: boolean; timeout?: number; text?: boolean }) => {
      const bar = ctx.progress(`parse ${blobId}`);
      let record: ParseRecord;
      try {
        record = await parseBlob(ctx.client(), blobId, {
          sync: o.sync, noWait: o.wait === false, timeoutMs: (o.timeout ?? 600) * 1000,
          onStatus: (r) => bar.status(r.status),
        });
      } finally {
        bar.done();
      }
      const r = record;
      const result = r.result ?? undefined;
      if (o.text && r.status === 'complete') ctx.print.line(result?.text ?? '');
      else {
        ctx.show(record, () => {
          const meta = result?.metadata ?? {};
          ctx.print.record({
            parse_id: r.parse_id, blob_id: r.blob_id, status: r.status, mode: r.mode, content_type: r.content_type,
            ...(result ? { kind: result.kind, characters: meta.char_count, chunks: meta.chunk_count, pages: meta.page_count, tables: meta.table_count, truncated: meta.truncated } : {}),
            ...(r.status === 'failed' ? { error: r.error, failure_reason: r.failure_reason } : {}),
            created_at: r.created_at, completed_at: r.completed_at,
          }, {});
          if (r.status === 'complete') ctx.print.line('svc blob parse --text prints the text; --json the whole result');
          if (r.status === 'queued' || r.status === 'running') ctx.print.line(`follow it: ${'status_url' in r ? r.status_url : ''}`);
        });
      }
      if (r.status === 'failed') throw new CliError(EXIT.parseFailed, `the parse failed (${cell(r.failure_reason)}): ${cell(r.error)}`, record);
    }));
  blob.command('list')
    .description('list your blobs, newest first')
    .option('--page <n>', 'page number', int(1, 1000000))
    .option('--per-page <n>', 'blobs per page, 1 to 100', int(1, 100))
    .option('--all', 'every blob, page after page')
    .action(run(async (ctx, o: { page?: number; perPage?: number; all?: boolean }) => {
      const columns: Columns<BlobItem> = [
        ['blob_id', 'blob_id'], ['filename', 'filename'], ['bytes', 'size_bytes'], ['content_type', 'content_type'], ['created_at', 'created_at'],
        ['parse', (b) => b.parse?.status ?? null],
      ];
      if (o.all) {
        const items = await collect(blobPages(ctx.client(), o.perPage ? { per_page: o.perPage } : {}));
        return ctx.show(items, () => ctx.print.rows(items, columns, { empty: '(no blobs)' }));
      }
      const res = await ok(ctx.client().GET('/v1/blobs', { params: { query: { ...(o.page ? { page: o.page } : {}), ...(o.perPage ? { per_page: o.perPage } : {}) } } }));
      ctx.show(res, () => pageFooter(ctx, res, res.blobs, columns, '(no blobs)'));
    }));
  blob.command('delete')
    .description('delete a blob')
    .argument('<blob_id>')
    .action(run(async (ctx, blobId: string) => {
      await ok(ctx.client().DELETE('/v1/blobs/{blob_id}', { params: { path: { blob_id: blobId } } }));
      ctx.show({ blob_id: blobId, deleted: true }, () => ctx.print.line(`deleted ${blobId}`));
    }));

  // ---- web ----
  program.command('search')
    .description('search the web; results carry credibility scores (the host needs a search provider)')
    .argument('<query>')
    .option('-n, --num <n>', 'results wanted, 1 to 20', int(1, 20))
    .action(run(async (ctx, q: string, o: { num?: number }) => {
      const res = await ok(ctx.client().GET('/v1/search', { params: { query: { q, ...(o.num ? { num_results: o.num } : {}) } } }));
      ctx.show(res, () => ctx.print.rows(res.results, [['title', 'title'], ['url', 'url'], ['credibility', 'credibility_score'], ['published', 'published_date']], { empty: '(no results)' }));
    }));
  program.command('browse')
    .description('fetch a public web page through svc and print its title and main text')
    .argument('<url>')
    .option('--dynamic', 'render it in a headless browser first (when the host has one)')
    .option('--text', 'print only the text')
    .action(run(async (ctx, url: string, o: { dynamic?: boolean; text?: boolean }) => {
      const res = await ok(ctx.client().POST('/v1/browse', { body: { url, ...(o.dynamic ? { mode: 'dynamic' as const } : {}) } }));
      if (o.text) return ctx.print.line(res.text);
      ctx.show(res, () => {
        ctx.print.record(res, { omit: ['status', 'text'] });
        ctx.print.line();
        ctx.print.line(res.text);
      });
    }));

  // ---- billing, passport, directory ----
  program.command('billing')
    .description('credit, tier, quotas and usage this month')
    .action(run(async (ctx) => {
      const res = await ok(ctx.client().GET('/v1/billing'));
      ctx.show(res, () => ctx.print.record(res, { omit: ['status'] }));
    }));

  const passport = program.command('passport').description('passports: show one, or prove control of your key for a session token');
  passport.command('show', { isDefault: true })
    .description('a passport (public): yours by default')
    .argument('[agent_id]')
    .action(run(async (ctx, agentId: string | undefined) => {
      const id = agentId ?? ctx.conf.agentId;
      if (!id) throw new CliError(EXIT.config, 'no agent: give an agent_id, or run `svc register` first');
      const res = await ok(ctx.anonymous().GET('/v1/agents/{agent_id}/passport', { params: { path: { agent_id: id } } }));
      ctx.show(res, () => {
        const p = res.passport;
        ctx.print.record({
          did: p.did, agent_id: p.agent_id, agent_name: p.agent_name, key_algorithm: p.key_algorithm, trust_levels: p.trust_levels,
          verified_capabilities: p.capabilities.verified, reputation: p.reputation.score, reputation_status: p.reputation.status, revoked_at: p.revoked_at, created_at: p.created_at,
          public_key: p.public_key,
        });
      });
    }));
  passport.command('session')
    .description('sign a challenge with your local passport key and get a session token (3600 s)')
    .action(run(async (ctx) => {
      const { conf } = ctx;
      if (!conf.agentId || !conf.passportKeyFile) throw new CliError(EXIT.config, `no passport key in ${conf.configPath}: run \`svc register\` first`);
      let pem: string;
      try {
        pem = readFileSync(conf.passportKeyFile, 'utf8');
      } catch (e) {
        throw new CliError(EXIT.config, `cannot read the passport key ${conf.passportKeyFile}: ${(e as Error).message}`);
      }
      const res = await passportSession(ctx.anonymous(), { agentId: conf.agentId, privateKey: pem });
      ctx.show(res, () => {
        ctx.print.record(res, { omit: ['status'] });
        ctx.print.line('Use it as a key: SVC_API_KEY=<session_token> svc me');
      });
    }));

  program.command('agents')
    .description('the public directory of agents, best reputation first')
    .option('--limit <n>', 'agents per page, 1 to 100', int(1, 100))
    .option('--type <agent_type>', 'only this agent_type')
    .option('--domain <domain>', 'only this domain')
    .option('--bridge-only', 'only bridge agents')
    .option('--all', 'every page')
    .action(run(async (ctx, o: { limit?: number; type?: string; domain?: string; bridgeOnly?: boolean; all?: boolean }) => {
      const query = { ...(o.limit ? { limit: o.limit } : {}), ...(o.type ? { agent_type: o.type } : {}), ...(o.domain ? { domain: o.domain } : {}), ...(o.bridgeOnly ? { bridge_only: true } : {}) };
      const columns: Columns<DirectoryAgent> = [
        ['agent_id', 'agent_id'], ['agent_name', 'agent_name'], ['type', 'agent_type'], ['domain', 'domain'],
        ['reputation', 'reputation_score'], ['trust', (a) => a.trust_summary.trust_levels], ['bio', 'bio'],
      ];
      if (o.all) {
        const agents = await collect(directory(ctx.anonymous(), query));
        return ctx.show(agents, () => ctx.print.rows(agents, columns, { empty: '(no listed agents)' }));
      }
      // directoryPages yields at least one page (or throws).
      const page = (await directoryPages(ctx.anonymous(), query).next()).value as DirectoryPage;
      ctx.show(page, () => {
        ctx.print.rows(page.agents, columns, { empty: '(no listed agents)' });
        if (page.next_cursor) ctx.print.line('more: svc agents --all');
      });
    }));

  // ---- config ----
  const config = program.command('config').description('the settings the CLI uses, and where each comes from');
  config.command('show', { isDefault: true })
    .description('the effective settings (the key masked)')
    .action(run(async (ctx) => {
      const { conf } = ctx;
      const mask = (k?: string) => (k ? `${k.slice(0, k.startsWith('svc_session_') ? 16 : 8)}… (${k.length} characters)` : undefined);
      const view = {
        config_file: conf.configPath,
        url: conf.url, url_from: conf.sources.url,
        api_key: mask(conf.apiKey) ?? null, api_key_from: conf.sources.apiKey,
        agent_id: conf.agentId ?? null, agent_name: conf.file.agent_name ?? null,
        passport_key_file: conf.passportKeyFile ?? null,
      };
      ctx.show(view, () => ctx.print.record(view));
    }));
  config.command('set')
    .description(`set a value in the config file (${CONFIG_FIELDS.join(', ')})`)
    .addArgument(new Argument('<name>', 'setting').choices(CONFIG_FIELDS))
    .argument('<value>')
    .action(run(async (ctx, name: (typeof CONFIG_FIELDS)[number], value: string) => {
      if (name === 'url') {
        try {
          new URL(value);
        } catch {
          throw new CliError(EXIT.usage, `${value} is not a URL`);
        }
      }
      writeConfigFile(ctx.conf.configPath, { ...ctx.conf.file, [name]: value });
      ctx.show({ [name]: name === 'api_key' ? '(set)' : value, config_file: ctx.conf.configPath }, () => ctx.print.line(`${name} set in ${ctx.conf.configPath}`));
    }));

  return program;
}

/** A numbered page's items as a table, with where the rest is. */
function pageFooter<T>(ctx: Ctx, res: { total: number; page: number; per_page: number }, items: T[], columns: Columns<T>, empty: string): void {
  ctx.print.rows(items, columns, { empty });
  const { total, page, per_page: perPage } = res;
  if (page * perPage < total) ctx.print.line(`page ${page} of ${Math.ceil(total / perPage)} (${total} in all): --page ${page + 1} for the next, --all for every one`);
}

/** Runs the CLI; resolves with the exit code. */
export async function main(argv: string[], io: Io): Promise<number> {
  const program = buildProgram(io);
  const json = argv.includes('--json');
  try {
    await program.parseAsync(argv, { from: 'user' });
    return EXIT.ok;
  } catch (e) {
    if (e instanceof CommanderError) {
      // --help and --version end with 0; any other refusal of the command line (already printed) with 2.
      return e.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    const code = exitCodeOf(e);
    const message = messageOf(e, Ctx.lastUrl ?? '(unknown)');
    if (json) {
      const body = e instanceof SvcError ? e.body : e instanceof CliError ? e.body : undefined;
      io.stderr.write(`${JSON.stringify({ error: { exit_code: code, message, ...(e instanceof SvcError ? { status: e.status, error_code: e.errorCode } : {}), ...(body !== undefined ? { body } : {}) } })}\n`);
    } else {
      io.stderr.write(`svc: ${message}\n`);
    }
    if (code === EXIT.failure && !(e instanceof CliError) && io.env.SVC_DEBUG) io.stderr.write(`${(e as Error).stack}\n`);
    return code;
  }
}
