#!/usr/bin/env node
// The `svc` command: runs the TypeScript source through tsx (a dependency), so `npm ci` is all it
// needs. Exit codes: sdk/README.md.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli.ts');
process.exitCode = await main(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env });
