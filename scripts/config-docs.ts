/**
 * Prints the configuration reference (markdown) from `settingsGroups` in src/config.ts, the one
 * place settings are declared. `npm run config:docs` prints it; `--write` also saves it to
 * docs/configuration.md.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { settingsGroups } from '../src/config';

const cell = (s: string) => s.replace(/\|/g, '\\|').replace(/\n/g, ' ');

export function configurationMarkdown(): string {
  const out = [
    '# Configuration',
    '',
    'Every setting is an environment variable. This file is generated from the setting declarations',
    '(`src/config/*.ts`) by `npm run config:docs -- --write`; do not edit it by hand.',
    '',
  ];
  for (const g of settingsGroups) {
    const settings = Object.values(g.settings);
    out.push(`## ${g.title}`, '');
    if (settings.length === 0) {
      out.push('No settings.', '');
      continue;
    }
    out.push('| Variable | Default | Description |', '|---|---|---|');
    for (const s of settings) out.push(`| \`${s.env}\` | ${s.defaultText === '' ? '(unset)' : `\`${cell(s.defaultText)}\``} | ${cell(s.doc)} |`);
    out.push('');
  }
  return out.join('\n');
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const md = configurationMarkdown();
  if (process.argv.includes('--write')) {
    writeFileSync(new URL('../docs/configuration.md', import.meta.url), md);
    process.stderr.write('wrote docs/configuration.md\n');
  }
  process.stdout.write(md);
}
