/**
 * A real S3-compatible server (s3rver) on 127.0.0.1, a free port and a private temp directory,
 * with one bucket ready. Used by the S3 blob store tests and anything that needs SVC_BLOB_STORE=s3.
 *
 * s3rver runs in a child process: like a real object store it is not part of our process, so
 * memory measurements of the service side stay honest, and the server gets the other CPU core.
 * The child exits when its stdin closes, so a crashed test run leaves no server behind.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';

export interface FakeS3 {
  /** e.g. http://127.0.0.1:40123 (path-style addressing required). */
  endpoint: string;
  bucket: string;
  region: string;
  /** s3rver's fixed credentials. It rejects an unknown access key id but does not verify SigV4 signatures. */
  accessKeyId: string;
  secretAccessKey: string;
  /** Where s3rver keeps objects (for tests that look at what is stored). */
  directory: string;
  close(): Promise<void>;
}

const CHILD = `
const S3rver = require(process.env.S3RVER_MODULE);
const server = new S3rver({
  address: '127.0.0.1', port: 0, silent: true, directory: process.env.S3RVER_DIR,
  configureBuckets: [{ name: process.env.S3RVER_BUCKET, configs: [] }],
});
server.run().then(
  (addr) => process.stdout.write(JSON.stringify({ port: addr.port }) + '\\n'),
  (err) => { console.error(err); process.exit(1); },
);
process.stdin.resume();
process.stdin.on('end', () => server.close().finally(() => process.exit(0)));
`;

export async function startFakeS3(bucket = 'svc-test'): Promise<FakeS3> {
  const directory = await mkdtemp(join(tmpdir(), 'svc-s3rver-'));
  const child = spawn(process.execPath, ['-e', CHILD], {
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { ...process.env, S3RVER_MODULE: createRequire(import.meta.url).resolve('s3rver'), S3RVER_DIR: directory, S3RVER_BUCKET: bucket },
  });
  const exited = once(child, 'exit');
  const lines = createInterface({ input: child.stdout! });
  const port = await new Promise<number>((resolve, reject) => {
    lines.once('line', (line) => resolve((JSON.parse(line) as { port: number }).port));
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`s3rver exited with code ${code} before listening`))); // no-op once resolved
  });
  lines.close();
  return {
    endpoint: `http://127.0.0.1:${port}`,
    bucket,
    region: 'us-east-1',
    accessKeyId: 'S3RVER',
    secretAccessKey: 'S3RVER',
    directory,
    async close() {
      if (child.exitCode === null) {
        child.stdin!.end();
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
      }
      await rm(directory, { recursive: true, force: true });
    },
  };
}
