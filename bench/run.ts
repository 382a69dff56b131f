/**
 * `npm run bench -- <name>` runs one benchmark of this folder (`npm run bench` lists them).
 * Each prints its figure as a ratio against a baseline measured in the same run.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const dir = fileURLToPath(new URL('.', import.meta.url));
const names = readdirSync(dir).filter((f) => f.endsWith('.ts') && !['run.ts', 'harness.ts'].includes(f)).map((f) => f.replace(/\.ts$/, ''));
const [name, ...args] = process.argv.slice(2);
if (!name || !names.includes(name)) {
  process.stdout.write(`usage: npm run bench -- <name> [args]\nbenchmarks: ${names.join(', ')}\nfigures: bench/README.md\n`);
  process.exit(name ? 1 : 0);
}
const r = spawnSync(process.execPath, ['--import', 'tsx', `${dir}${name}.ts`, ...args], { stdio: 'inherit' });
process.exit(r.status ?? 1);
