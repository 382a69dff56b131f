/**
 * One MCP tool call = one HTTP request to the route the tool maps to, made with app.inject and
 * the caller's own Authorization header. Auth, validation, limits, metering and the response
 * are therefore exactly the route's: there is no second implementation of any behaviour.
 */
import type { FastifyInstance, InjectOptions } from 'fastify';
import { BASE64_PATTERN, MEDIA_TYPE_PATTERN, type ResolvedAction, type ToolDefinition } from '../discovery/tool-defs';

export interface ToolCallOutcome {
  [extra: string]: unknown;
  isError: boolean;
  content: { type: 'text'; text: string }[];
}

export class ToolInputError extends Error {}

const BASE64 = new RegExp(BASE64_PATTERN);
const MEDIA_TYPE = new RegExp(MEDIA_TYPE_PATTERN);

/**
 * The bytes of a content_base64 argument. Node's decoder skips every character outside the alphabet,
 * so text that is not base64 would be stored as other bytes without a word: it is refused instead.
 */
export function decodeBase64(text: string): Buffer {
  const data = text.replace(/=+$/, '');
  if (!BASE64.test(text) || data.length % 4 === 1 || (data.length !== text.length && text.length % 4 !== 0)) {
    throw new ToolInputError('content_base64 is not base64 (standard or URL-safe alphabet, padding optional, no whitespace)');
  }
  return Buffer.from(data, 'base64');
}

/** Picks the action a call means: the only one, or the `action` argument. */
export function actionOf(def: ToolDefinition, args: Record<string, unknown>): ResolvedAction {
  if (def.actions.length === 1) return def.actions[0];
  const name = args.action;
  const found = def.actions.find((a) => a.action === name);
  if (!found) throw new ToolInputError(`${def.name}: action must be one of ${def.actions.map((a) => a.action).join(', ')}`);
  return found;
}

/** The HTTP request an action + arguments stand for. */
export function requestFor(action: ResolvedAction, args: Record<string, unknown>, authorization?: string): InjectOptions {
  const missing = action.inputs.params.filter((p) => args[p] === undefined || args[p] === '');
  if (missing.length) throw new ToolInputError(`missing required argument(s): ${missing.join(', ')}`);
  // Dots too: a value "." or ".." would otherwise be resolved as a path step and reach another route.
  const url = action.path.replace(/\{([A-Za-z0-9_]+)\}/g, (_m, p: string) => encodeURIComponent(String(args[p])).replace(/\./g, '%2E'));
  const query: Record<string, string> = {};
  for (const q of action.inputs.query) if (args[q] !== undefined) query[q] = typeof args[q] === 'string' ? (args[q] as string) : JSON.stringify(args[q]);
  const headers: Record<string, string> = {};
  if (authorization) headers.authorization = authorization;
  let payload: string | Buffer | undefined;
  if (action.body === 'raw-body') {
    if (typeof args.content_base64 !== 'string') throw new ToolInputError('content_base64 is required (base64 of the bytes)');
    if (args.content_type !== undefined && (typeof args.content_type !== 'string' || !MEDIA_TYPE.test(args.content_type))) {
      throw new ToolInputError('content_type must be a media type (type/subtype, e.g. application/pdf)');
    }
    payload = decodeBase64(args.content_base64);
    headers['content-type'] = typeof args.content_type === 'string' ? args.content_type : 'application/octet-stream';
  } else if (action.inputs.body.length) {
    const body: Record<string, unknown> = {};
    for (const b of action.inputs.body) if (args[b] !== undefined) body[b] = args[b];
    payload = JSON.stringify(body);
    headers['content-type'] = 'application/json';
  }
  return { method: action.method as InjectOptions['method'], url, query, headers, ...(payload !== undefined ? { payload } : {}) };
}

export async function callTool(
  app: FastifyInstance, def: ToolDefinition, args: Record<string, unknown>, authorization?: string,
): Promise<ToolCallOutcome> {
  let action: ResolvedAction;
  let req: InjectOptions;
  try {
    action = actionOf(def, args);
    if (!action.route) throw new ToolInputError(`${def.name} ${action.action}: ${action.method} ${action.path} is not served by this instance`);
    // The input schema allows no other properties; an argument it does not name would be dropped unseen.
    const known = new Set(Object.keys((def.inputSchema.properties ?? {}) as Record<string, unknown>));
    const unknown = Object.keys(args).filter((k) => !known.has(k));
    if (unknown.length) throw new ToolInputError(`${def.name}: unknown argument(s) ${unknown.join(', ')}; the input schema names ${[...known].join(', ')}`);
    req = requestFor(action, args, authorization);
  } catch (e) {
    if (e instanceof ToolInputError) return { isError: true, content: [{ type: 'text', text: JSON.stringify({ error_code: 'TOOL_INPUT_INVALID', message: e.message }) }] };
    throw e;
  }
  const res = await app.inject(req);
  const type = String(res.headers['content-type'] ?? '');
  const text = res.statusCode === 204
    ? JSON.stringify({ status: 'success', http_status: 204 })
    // Stored bytes (a blob of any type, text/* included) travel as base64, so they come back exactly.
    : (type.includes('json') || type.startsWith('text/')) && !(action.response === 'bytes' && res.statusCode < 400)
      ? res.body
      : JSON.stringify({ http_status: res.statusCode, content_type: type, content_base64: res.rawPayload.toString('base64') });
  return { isError: res.statusCode >= 400, content: [{ type: 'text', text }] };
}
