/**
 * The human-readable API reference (GET /docs): one self-contained HTML page rendered from the
 * OpenAPI document, so it can never disagree with it. No external assets.
 */
type Doc = Record<string, any>;

const esc = (s: unknown): string =>
  String(s ?? '').replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);

const anchor = (method: string, path: string) => `${method}-${path}`.replace(/[^A-Za-z0-9]+/g, '-');

function typeOf(s: Doc | undefined): string {
  if (!s) return '';
  if (s.$ref) return s.$ref.split('/').pop();
  if (s.enum) return s.enum.map((v: unknown) => JSON.stringify(v)).join(' | ');
  if (s.anyOf) return s.anyOf.map(typeOf).join(' | ');
  if (s.const !== undefined) return JSON.stringify(s.const);
  return Array.isArray(s.type) ? s.type.join(' | ') : s.type ?? 'any';
}

function constraints(s: Doc | undefined): string {
  if (!s) return '';
  const out: string[] = [];
  for (const k of ['minimum', 'maximum', 'minLength', 'maxLength', 'pattern', 'format', 'default']) if (s[k] !== undefined) out.push(`${k}: ${JSON.stringify(s[k])}`);
  return out.join(', ');
}

function fieldRows(rows: { name: string; where: string; required: boolean; schema?: Doc; description?: string }[]): string {
  if (!rows.length) return '';
  return `<table><tr><th>Field</th><th>In</th><th>Type</th><th>Required</th><th>Notes</th></tr>${rows.map((r) =>
    `<tr><td><code>${esc(r.name)}</code></td><td>${esc(r.where)}</td><td>${esc(typeOf(r.schema))}</td><td>${r.required ? 'yes' : ''}</td>`
    + `<td>${esc([r.description ?? r.schema?.description, constraints(r.schema)].filter(Boolean).join(' — '))}</td></tr>`).join('')}</table>`;
}

function operation(method: string, path: string, op: Doc): string {
  const rows = (op.parameters ?? []).map((p: Doc) => ({ name: p.name, where: p.in, required: !!p.required, schema: p.schema, description: p.description }));
  const body = op.requestBody?.content?.['application/json']?.schema;
  if (body?.properties) {
    const req = new Set(body.required ?? []);
    for (const [name, s] of Object.entries<Doc>(body.properties)) rows.push({ name, where: 'body', required: req.has(name), schema: s });
  }
  const responses = Object.entries<Doc>(op.responses ?? {}).map(([status, r]) =>
    `<li><b>${esc(status)}</b> ${esc(r.description)}</li>`).join('');
  return `<section class="op" id="${anchor(method, path)}"><h3><span class="m ${esc(method)}">${esc(method.toUpperCase())}</span> <code>${esc(path)}</code>`
    + `${op.deprecated ? ' <span class="dep">deprecated</span>' : ''}</h3><p>${esc(op.summary)}</p>`
    + `<p class="auth">Auth: <b>${esc(op['x-svc-auth'] ?? 'key')}</b></p>${fieldRows(rows)}<ul class="resp">${responses}</ul></section>`;
}

export function renderDocsPage(doc: Doc): string {
  const ops: { method: string; path: string; op: Doc; tag: string }[] = [];
  for (const [path, item] of Object.entries<Doc>(doc.paths ?? {})) {
    for (const [method, op] of Object.entries<Doc>(item)) {
      if (typeof op === 'object' && op.responses) ops.push({ method, path, op, tag: op.tags?.[0] ?? path.split('/')[2] ?? path.split('/')[1] ?? 'other' });
    }
  }
  const groups = new Map<string, typeof ops>();
  for (const o of ops) (groups.get(o.tag) ?? groups.set(o.tag, []).get(o.tag)!).push(o);
  const toc = [...groups].map(([tag, list]) => `<li>${esc(tag)}<ul>${list.map((o) =>
    `<li><a href="#${anchor(o.method, o.path)}">${esc(o.method.toUpperCase())} ${esc(o.path)}</a></li>`).join('')}</ul></li>`).join('');
  const designs = (doc['x-svc-designs'] ?? []).map((d: Doc) =>
    `<tr><td>${esc(d.spec_item)}</td><td>${esc(d.design)}</td><td><code>${esc(d.see)}</code></td></tr>`).join('');
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${esc(doc.info?.title)} ${esc(doc.info?.version)}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:15px/1.5 system-ui,sans-serif;margin:0;display:flex}nav{width:300px;height:100vh;overflow:auto;position:sticky;top:0;background:#f6f6f8;padding:1em;font-size:13px}
main{flex:1;padding:1em 2em;max-width:1000px}nav ul{padding-left:1em;list-style:none}table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ddd;padding:3px 6px;text-align:left;vertical-align:top}
.m{font-family:monospace;padding:1px 6px;border-radius:3px;color:#fff;background:#555}.get{background:#2a7}.post{background:#27c}.put{background:#c82}.delete{background:#c33}
.dep{color:#c33;font-size:12px}.op{border-top:1px solid #eee;padding-top:.5em}</style></head>
<body><nav><b>${esc(doc.info?.title)} ${esc(doc.info?.version)}</b><p><a href="/openapi.json">openapi.json</a></p><ul>${toc}</ul></nav>
<main><h1>${esc(doc.info?.title)} <small>${esc(doc.info?.version)}</small></h1><p>${esc(doc.info?.description)}</p>
<h2>Errors</h2><p>${esc(doc.components?.schemas?.ApiError?.description)}</p>
<h2>How svc behaves where the API leaves details open</h2><table><tr><th>Item</th><th>Design</th><th>See</th></tr>${designs}</table>
<h2>Operations</h2>${ops.map((o) => operation(o.method, o.path, o.op)).join('\n')}</main></body></html>`;
}
