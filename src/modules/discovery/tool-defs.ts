/**
 * Tool definitions derived from TOOL_SPECS and the live route table. Derivation happens on
 * first use after the app is ready (no route can be added after that), so tools whose routes a
 * module registers later still get schemas from that module's route schemas. The served bytes
 * are computed once; the manifest hashes exactly those bytes.
 */
import { createHash } from 'node:crypto';
import { SVC_VERSION } from '../../version';
import type { JsonSchema, RouteInfo, RouteTable } from './route-table';
import { scopedKeyNeeds, tightened } from './schema-facts';
import { TOOL_SPECS, toolFile, toolName, type ToolAction, type ToolSpec } from './tool-map';

export interface ResolvedAction extends ToolAction {
  route?: RouteInfo;
  /** Where each input goes when the tool is called. */
  inputs: { params: string[]; query: string[]; body: string[] };
  required: string[];
}

export interface ToolDefinition {
  spec: ToolSpec;
  name: string;
  file: string;
  actions: ResolvedAction[];
  inputSchema: JsonSchema;
  /** True when at least one action's route is served by this instance. */
  available: boolean;
  /** The tool's description as this host serves it: the spec's, then what is unavailable here (host-features.ts). */
  description: string;
}

/** Base64 as the blob tools take it: standard or URL-safe alphabet, padding optional (dispatch.ts decodes exactly this). */
export const BASE64_PATTERN = '^[A-Za-z0-9+/_-]*={0,2}$';
/** type/subtype with optional parameters (RFC 9110 media-type tokens), as the upload route takes a Content-Type. */
export const MEDIA_TYPE_PATTERN = "^[!#$%&'*+.^_`|~0-9A-Za-z-]+/[!#$%&'*+.^_`|~0-9A-Za-z-]+(\\s*;.*)?$";

const pathParams = (path: string): string[] => [...path.matchAll(/\{([A-Za-z0-9_]+)\}/g)].map((m) => m[1]);

/** A schema's properties; for a union (a body that may also be null), those of its object members. */
const propsOf = (s?: JsonSchema): Record<string, JsonSchema> => {
  if (!s) return {};
  if (typeof s.properties === 'object') return s.properties;
  const members = Array.isArray(s.anyOf) ? s.anyOf : Array.isArray(s.oneOf) ? s.oneOf : [];
  return Object.assign({}, ...members.map((m: JsonSchema) => propsOf(m)));
};
const reqOf = (s?: JsonSchema): string[] => (s && Array.isArray(s.required) ? s.required : []);

/** Plain JSON copy: drops TypeBox's non-enumerable markers and any functions. */
const plain = (s: JsonSchema): JsonSchema => JSON.parse(JSON.stringify(s));

function resolveAction(action: ToolAction, table: RouteTable): { resolved: ResolvedAction; props: Record<string, JsonSchema> } {
  const route = table.find(action.method, action.path);
  const props: Record<string, JsonSchema> = {};
  const inputs = { params: [] as string[], query: [] as string[], body: [] as string[] };
  const required = new Set<string>();
  const params = route?.params ? propsOf(route.params) : Object.fromEntries(pathParams(action.path).map((p) => [p, { type: 'string' }]));
  for (const [k, v] of Object.entries(params)) {
    props[k] = plain(v);
    inputs.params.push(k);
    required.add(k);
  }
  for (const [k, v] of Object.entries(propsOf(route?.querystring))) {
    props[k] ??= plain(v);
    inputs.query.push(k);
  }
  reqOf(route?.querystring).forEach((k) => required.add(k));
  if (action.body === 'raw-body') {
    props.content_base64 = {
      type: 'string', pattern: BASE64_PATTERN, contentEncoding: 'base64',
      description: 'The bytes to store, base64-encoded (standard or URL-safe alphabet, padding optional, no whitespace)',
    };
    props.content_type = { type: 'string', pattern: MEDIA_TYPE_PATTERN, description: 'Media type of the bytes, e.g. application/pdf', default: 'application/octet-stream' };
    required.add('content_base64');
  } else {
    for (const [k, v] of Object.entries(propsOf(route?.body))) {
      props[k] ??= plain(v);
      inputs.body.push(k);
    }
    reqOf(route?.body).forEach((k) => required.add(k));
  }
  // What the handler enforces beyond its schema (a required search q, a note's length) is part of the tool's input rules too.
  if (route) {
    for (const rule of route.inputRules) {
      if (!(rule.field in props)) continue;
      props[rule.field] = tightened(props[rule.field], rule.schema)!;
      if (rule.required) required.add(rule.field);
    }
  }
  return { resolved: { ...action, route, inputs, required: [...required] }, props };
}

function derive(spec: ToolSpec, table: RouteTable): ToolDefinition {
  const all = spec.actions.map((a) => resolveAction(a, table));
  // The schema offers what this instance serves (all actions only when none is served: such a tool is not listed live).
  const served = all.filter((r) => r.resolved.route !== undefined);
  const resolved = served.length > 0 ? served : all;
  const single = all.length === 1;
  const properties: Record<string, JsonSchema> = {};
  const usedBy: Record<string, string[]> = {};
  if (!single) {
    properties.action = {
      type: 'string',
      enum: resolved.map((r) => r.resolved.action),
      description: resolved.map((r) => `${r.resolved.action}: ${r.resolved.route?.summary || `${r.resolved.method} ${r.resolved.path}`}`).join('; '),
    };
  }
  // A property several actions take with different rules (a search limit of 1-20, a context limit
  // of 1-50) is offered as any of them; each route still applies its own.
  const variants: Record<string, JsonSchema[]> = {};
  for (const r of resolved) {
    for (const [k, v] of Object.entries(r.props)) {
      const seen = (variants[k] ??= []);
      // Two actions with the same rule (blob_id of every blob route) give one variant, whatever their descriptions say.
      const rule = JSON.stringify({ ...v, description: undefined });
      if (!seen.some((x) => JSON.stringify({ ...x, description: undefined }) === rule)) seen.push(v);
      (usedBy[k] ??= []).push(r.resolved.action);
    }
  }
  for (const [k, vs] of Object.entries(variants)) {
    properties[k] = vs.length === 1 ? vs[0] : { anyOf: vs.map(({ description: _d, ...rule }) => rule), ...(vs[0].description ? { description: vs[0].description } : {}) };
  }
  if (!single) {
    for (const [k, actions] of Object.entries(usedBy)) {
      const req = resolved.filter((r) => r.resolved.required.includes(k)).map((r) => r.resolved.action);
      const note = `Used by: ${actions.join(', ')}${req.length ? `; required by: ${req.join(', ')}` : ''}.`;
      properties[k] = { ...properties[k], description: properties[k].description ? `${properties[k].description}. ${note}` : note };
    }
  }
  const inputSchema: JsonSchema = {
    type: 'object',
    properties,
    required: single ? resolved[0].resolved.required : ['action'],
    additionalProperties: false,
  };
  return {
    spec,
    name: toolName(spec.id),
    file: toolFile(spec.id),
    actions: all.map((r) => r.resolved),
    inputSchema,
    available: served.length > 0,
    description: spec.description,
  };
}

export interface ToolCatalog {
  definitions(): ToolDefinition[];
  /** The exact bytes served at /mcp/v1/<file>. */
  bytesOf(file: string): Buffer | undefined;
  manifest(): { body: Buffer; etag: string };
}

export const sha256Hex = (b: Buffer | string): string => createHash('sha256').update(b).digest('hex');

/** The document served for one tool; its name is inside the hashed bytes. */
function fileDocument(d: ToolDefinition, baseUrl: string): Record<string, unknown> {
  return {
    schema_version: 'svc.tool.v1',
    id: d.file.replace(/\.json$/, ''),
    name: d.name,
    description: d.description,
    inputSchema: d.inputSchema,
    actions: d.actions.map((x) => ({
      action: x.action,
      method: x.method,
      path: x.path,
      url: `${baseUrl}${x.path}`,
      auth: x.route?.auth ?? 'key',
      // What a scoped key needs: a capability URI, 'any', or null (refused); absent for public actions.
      scope: x.route ? scopedKeyNeeds(x.route) : null,
      summary: x.route?.summary ?? '',
      required: x.required,
      served: x.route !== undefined,
    })),
    authentication: { type: 'http', scheme: 'bearer', header: 'Authorization', format: 'Bearer svc_...' },
    mcp_endpoint: `${baseUrl}/mcp`,
    svc_version: SVC_VERSION,
  };
}

/** `hostNotes`: per tool id, what is unavailable on this host (host-features.ts toolHostNotes), added to its description. */
export function createToolCatalog(table: RouteTable, baseUrl: string, hostNotes: Record<string, string> = {}): ToolCatalog {
  let built: { defs: ToolDefinition[]; files: Map<string, Buffer>; manifest: { body: Buffer; etag: string } } | undefined;
  const build = () => {
    if (built) return built;
    const defs = TOOL_SPECS.map((s) => derive(s, table)).map((d) => (hostNotes[d.spec.id] ? { ...d, description: `${d.description} ${hostNotes[d.spec.id]}` } : d));
    const files = new Map(defs.map((d) => [d.file, Buffer.from(`${JSON.stringify(fileDocument(d, baseUrl), null, 2)}\n`)]));
    const tools = Object.fromEntries(defs.map((d) => [d.file.replace(/\.json$/, ''), sha256Hex(files.get(d.file)!)]));
    const body = Buffer.from(`${JSON.stringify({
      version: SVC_VERSION,
      algorithm: 'sha256',
      tools,
      urls: Object.fromEntries(defs.map((d) => [d.file.replace(/\.json$/, ''), `${baseUrl}/mcp/v1/${d.file}`])),
    }, null, 2)}\n`);
    built = { defs, files, manifest: { body, etag: `"${sha256Hex(body)}"` } };
    return built;
  };
  return {
    definitions: () => build().defs,
    bytesOf: (file) => build().files.get(file),
    manifest: () => build().manifest,
  };
}
