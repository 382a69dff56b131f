#!/usr/bin/env node
/**
 * Builds src/main.ts into dist/ for `npm start` (`node scripts/build.mjs && exec node dist/main.js`),
 * so that the service runs on plain Node. Run through tsx instead, Node 20 runs tsx's module hooks
 * in a loader thread of their own: some 50 MiB of resident memory for the life of the process.
 *
 * Up to date (every file under src/, any other file of the repository the last build read,
 * tsconfig.json, this script and the Node version unchanged since the last build: paths, sizes and
 * modification times), it only compares, in a few milliseconds. Otherwise esbuild (tsx's own
 * compiler, resolved through tsx) bundles src/main.ts with the packages left as imports of
 * node_modules, in under a second.
 *
 * What the bundle keeps of the sources' layout:
 *  - `import.meta.url` still names the source file, so paths a module builds from it (public/,
 *    src/infra/db/migrations/, the workers' TypeScript entries, which run through tsx inside their
 *    thread or process as before) point where they do under tsx;
 *  - a module imported with import() is its own chunk, loaded on first use with the packages it
 *    imports (code splitting), so lazily loaded libraries stay lazy;
 *  - the migrations, which migrate.ts imports by a computed path, are chunks too: import() with a
 *    computed argument goes through a table from those paths to the chunks;
 *  - function and class names (keepNames: an error may name itself after its class).
 *
 * Chunks are named by their content. A running svc loads some of them only on first use, so a rebuild
 * removes the chunks the new build does not use only when no process runs dist/main.js (read from
 * /proc; where that cannot be known, they stay). `node scripts/build.mjs --force` rebuilds regardless.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const srcDir = join(root, 'src');
const outDir = join(root, 'dist');
const stampFile = join(outDir, 'build-stamp.json');
const entry = join(srcDir, 'main.ts');
/** Folders whose TypeScript modules src/ imports by a computed path (import(url) with a variable). */
const computedImportDirs = ['src/infra/db/migrations'];

const posix = (p) => p.split(sep).join('/');

/** Every file under src/ (new or removed files count: a new migration changes no other file). */
function listFiles(dir, out = []) {
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) listFiles(p, out);
    else out.push(p);
  }
  return out;
}

/**
 * A fingerprint of the build's inputs: path, size and modification time of each file under src/,
 * of the files outside src/ and node_modules/ that the last build read (`extra`), of tsconfig.json
 * and this script, and the Node version (the build's target).
 */
function fingerprint(extra) {
  const files = [...new Set([...listFiles(srcDir), ...extra.map((f) => join(root, f)), join(root, 'tsconfig.json'), fileURLToPath(import.meta.url)])].sort();
  const h = createHash('sha256');
  h.update(`${process.version}\n`);
  for (const f of files) {
    const s = statSync(f);
    h.update(`${posix(relative(root, f))}\0${s.size}\0${s.mtimeMs}\n`);
  }
  return h.digest('hex');
}

function readStamp() {
  try {
    return JSON.parse(readFileSync(stampFile, 'utf8'));
  } catch {
    return undefined;
  }
}

function upToDate(stamp) {
  try {
    return stamp !== undefined && stamp.fingerprint === fingerprint(stamp.extra) && existsSync(join(outDir, 'main.js'));
  } catch {
    return false; // an input removed
  }
}

/** esbuild plugin: the source-layout rewrites described at the top. */
function sourceLayout() {
  const table = computedImportDirs.flatMap((d) =>
    readdirSync(join(root, d))
      .filter((f) => /\.(ts|mts|mjs|js)$/.test(f) && !/\.test\.ts$/.test(f))
      .map((f) => `${d}/${f}`),
  );
  return {
    name: 'svc-source-layout',
    setup(b) {
      b.onResolve({ filter: /^svc-build:computed-import$/ }, () => ({ path: 'computed-import', namespace: 'svc-build' }));
      b.onLoad({ filter: /.*/, namespace: 'svc-build' }, () => ({
        resolveDir: root,
        loader: 'js',
        contents: [
          `const chunks = {`,
          ...table.map((p) => `  ${JSON.stringify(p)}: () => import(${JSON.stringify(`./${p}`)}),`),
          `};`,
          `let byUrl;`,
          `/** import() of a computed URL: a module of the build's table from its chunk, anything else natively. */`,
          `export function computedImport(spec) {`,
          `  byUrl ??= new Map(Object.entries(chunks).map(([p, load]) => [new URL(${JSON.stringify(`${posix(relative(outDir, root))}/`)} + p, import.meta.url).href, load]));`,
          `  const load = byUrl.get(String(spec));`,
          `  if (load) return load();`,
          `  if (/\\.[mc]?ts$/.test(String(spec))) return Promise.reject(new Error(\`\${spec} is TypeScript imported by a computed path outside the build's table (computedImportDirs in scripts/build.mjs)\`));`,
          `  return import(spec);`,
          `}`,
        ].join('\n'),
      }));
      b.onLoad({ filter: /\.(ts|mts|mjs|js)$/ }, (args) => {
        if (!args.path.startsWith(srcDir + sep)) return undefined;
        let text = readFileSync(args.path, 'utf8');
        const self = JSON.stringify(posix(relative(outDir, args.path)));
        text = text.replaceAll('import.meta.url', `new URL(${self}, import.meta.url).href`);
        let computed = false;
        text = text.replace(/\bimport\((?!\s*['"`])/g, () => {
          computed = true;
          return '__svcComputedImport(';
        });
        if (computed) text = `import { computedImport as __svcComputedImport } from 'svc-build:computed-import';\n${text}`;
        return { contents: text, loader: /\.[mc]?ts$/.test(args.path) ? 'ts' : 'js' };
      });
    },
  };
}

/** Whether a process other than this one may be running dist/main.js (true when it cannot be told). */
function mayBeRunning() {
  const main = join(outDir, 'main.js');
  let pids;
  try {
    pids = readdirSync('/proc').filter((p) => /^\d+$/.test(p) && Number(p) !== process.pid);
  } catch {
    return true;
  }
  for (const pid of pids) {
    let args;
    try {
      args = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      continue; // gone meanwhile
    }
    const arg = args.find((a) => a.endsWith('main.js'));
    if (!arg) continue;
    try {
      if (resolve(readlinkSync(`/proc/${pid}/cwd`), arg) === main) return true;
    } catch {
      return true; // another user's process, say: its directory cannot be read
    }
  }
  return false;
}

/**
 * Builds; the stamp gets the fingerprint taken before the build (a file saved during the build
 * makes the next start build again), over the previous build's list of files outside src/.
 */
async function build(previousExtra) {
  const before = fingerprint(previousExtra);
  const tsxRequire = createRequire(createRequire(import.meta.url).resolve('tsx/package.json'));
  const esbuild = tsxRequire('esbuild');
  const result = await esbuild.build({
    absWorkingDir: root,
    entryPoints: { main: entry },
    outdir: outDir,
    write: false,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: `node${process.versions.node.split('.')[0]}`,
    packages: 'external',
    tsconfig: join(root, 'tsconfig.json'),
    chunkNames: 'chunk-[hash]',
    sourcemap: 'linked',
    keepNames: true,
    metafile: true,
    logLevel: 'warning',
    plugins: [sourceLayout()],
  });
  // Each file written beside its place and renamed into it, chunks first and main.js last: a process
  // starting meanwhile reads the old main.js with its old chunks or the new one with its new chunks.
  const files = result.outputFiles.map((f) => ({ name: posix(relative(outDir, f.path)), contents: f.contents }));
  const ordered = [...files.filter((f) => !f.name.startsWith('main.')), ...files.filter((f) => f.name.startsWith('main.'))];
  for (const f of ordered) {
    const tmp = join(outDir, `.${f.name}.${process.pid}.tmp`);
    writeFileSync(tmp, f.contents);
    renameSync(tmp, join(outDir, f.name));
  }
  const outputs = files.map((f) => f.name);
  const extra = Object.keys(result.metafile.inputs)
    .filter((p) => !p.includes(':') && !p.startsWith('src/') && !p.includes('node_modules/'))
    .sort();
  // A changed list of files outside src/: the fingerprint did not cover them; the next start builds again.
  const same = extra.join('\n') === previousExtra.join('\n');
  writeFileSync(stampFile, `${JSON.stringify({ fingerprint: same ? before : 'inputs changed', extra, outputs }, null, 1)}\n`);
  if (!mayBeRunning()) {
    for (const f of readdirSync(outDir)) if (/^chunk-/.test(f) && !outputs.includes(f)) rmSync(join(outDir, f), { force: true });
  }
}

const stamp = readStamp();
if (process.argv.includes('--force') || !upToDate(stamp)) {
  mkdirSync(outDir, { recursive: true });
  const t0 = performance.now();
  try {
    await build(stamp?.extra ?? []);
  } catch (e) {
    // esbuild has printed the errors with their places; the stack of its summary adds nothing.
    process.stderr.write(`svc cannot start: building src/ into dist/ failed${e?.errors ? '' : `: ${e?.stack ?? e}`}\n`);
    process.exit(1);
  }
  if (process.argv.includes('--verbose')) process.stderr.write(`built dist/ in ${Math.round(performance.now() - t0)} ms\n`);
}
