import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { agentOf } from '../../http/auth';
import { errorResponses } from '../../http/response-schemas';
import { SIGNED_REQUEST_ERRORS } from '../identity/signatures';
import type { DelegationService } from './delegation';
import type { JournalService } from './journal';
import type { PolicyService } from './policies';
import {
  AgentParams, BindingAmendBody, BindingAmendCodes, BindingAmendRules, BindingsQuery, ConsolidationAmendBody, ConsolidationAmendCodes,
  ConsolidationAmendRules, ConsolidationPolicyResponse, DelegateBody, DelegateCodes, DelegateResponse, JournalCommitBody, JournalCommitmentsResponse,
  JournalCommitResponse, JournalCommitRules, JournalListQuery, ParentParams, PolicyBindingResponse, PolicyBindingsResponse, RegisterToolBody, RotateToolBody,
  ToolKeyCodes, ToolParams, ToolPassportResponse,
} from './schemas';
import type { ToolService } from './tools';

/** The signed-request codes plus a route's own, merged per status. */
const withSigned = (own: Record<number, string[]>): Record<number, string[]> => {
  const out: Record<number, string[]> = {};
  for (const [status, codes] of [...Object.entries(SIGNED_REQUEST_ERRORS), ...Object.entries(own)]) {
    out[Number(status)] = [...new Set([...(out[Number(status)] ?? []), ...codes])];
  }
  return out;
};

export const declarationRoutes = (deps: { policies: PolicyService; journal: JournalService; tools: ToolService; delegation: DelegationService }): FastifyPluginAsyncTypebox => async (app) => {
  const { policies, journal, tools, delegation } = deps;

  // ---- consolidation policy (recorded only) ----
  app.get('/v1/me/consolidation-policy', {
    schema: {
      response: { 200: ConsolidationPolicyResponse, ...errorResponses(404) },
      summary: 'Your consolidation policy (root key): template, params with declared_at, version and log index; recorded only', tags: ['trust'],
    },
    config: { auth: 'root', errors: { 404: ['CONSOLIDATION_POLICY_NOT_FOUND'] } },
  }, async (request) => policies.policy(agentOf(request).agentId, false));

  app.get('/v1/agents/:agent_id/consolidation-policy', {
    schema: {
      params: AgentParams, response: { 200: ConsolidationPolicyResponse, ...errorResponses(404) },
      summary: 'An agent\'s declared consolidation policy (public); recorded only, svc runs no consolidation engine', tags: ['trust'],
    },
    config: { auth: 'none', errors: { 404: ['AGENT_NOT_FOUND', 'CONSOLIDATION_POLICY_NOT_FOUND'] } },
  }, async (request) => policies.policy(request.params.agent_id, true));

  app.post('/v1/me/consolidation-policy/amend', {
    schema: {
      body: ConsolidationAmendBody, response: { 200: ConsolidationPolicyResponse, ...errorResponses(401, 403, 404, 409, 422) },
      summary: 'Declare or amend your consolidation policy (root key; template consolidation-v1, signed with svc.consolidation.amend.v1); a trust log entry', tags: ['trust'],
    },
    config: {
      auth: 'root', validationCodes: ConsolidationAmendCodes, inputRules: ConsolidationAmendRules,
      errors: withSigned({ 403: ['CONSOLIDATION_POLICY_AMEND_FORBIDDEN'], 422: ['CONSOLIDATION_POLICY_TEMPLATE_INVALID', 'CONSOLIDATION_POLICY_PARAMS_INVALID'] }),
    },
  }, async (request) => policies.amendPolicy(agentOf(request).agentId, request.body));

  // ---- policy bindings ----
  app.get('/v1/me/policy-bindings', {
    schema: {
      querystring: BindingsQuery, response: { 200: PolicyBindingsResponse, ...errorResponses(404, 409, 422) },
      summary: 'Your policy bindings (root key), each checked against its trust log entry', tags: ['trust'],
    },
    config: { auth: 'root', errors: { 404: ['POLICY_BINDING_NOT_FOUND'], 409: ['POLICY_BINDING_CORRUPT'], 422: ['POLICY_BINDING_TYPE_INVALID'] } },
  }, async (request) => policies.bindings(agentOf(request).agentId, false, request.query.binding_type));

  app.get('/v1/agents/:agent_id/policy-bindings', {
    schema: {
      params: AgentParams, querystring: BindingsQuery, response: { 200: PolicyBindingsResponse, ...errorResponses(404, 409, 422) },
      summary: 'An agent\'s policy bindings (public), each checked against its trust log entry', tags: ['trust'],
    },
    config: { auth: 'none', errors: { 404: ['AGENT_NOT_FOUND', 'POLICY_BINDING_NOT_FOUND'], 409: ['POLICY_BINDING_CORRUPT'], 422: ['POLICY_BINDING_TYPE_INVALID'] } },
  }, async (request) => policies.bindings(request.params.agent_id, true, request.query.binding_type));

  app.post('/v1/me/policy-bindings/amend', {
    schema: {
      body: BindingAmendBody, response: { 200: PolicyBindingResponse, ...errorResponses(401, 403, 404, 409, 422) },
      summary: 'Bind or amend a policy (root key; tool_allow_list of up to 32 tool names, signed with svc.policy_binding.amend.v1); a trust log entry', tags: ['trust'],
    },
    config: {
      auth: 'root', validationCodes: BindingAmendCodes, inputRules: BindingAmendRules,
      errors: withSigned({ 403: ['POLICY_BINDING_AMEND_FORBIDDEN'], 422: ['POLICY_BINDING_TYPE_INVALID', 'POLICY_BINDING_PARAMS_INVALID'] }),
    },
  }, async (request) => policies.amendBinding(agentOf(request).agentId, request.body));

  // ---- delegation (root key or passport session: closed to scoped keys) ----
  app.post('/v1/agents/:parent_agent_id/delegate', {
    schema: {
      params: ParentParams, body: DelegateBody, response: { 201: DelegateResponse, ...errorResponses(403, 409, 422) },
      summary: 'Delegate: a scoped sub-key limited to a write_set of svc tools (within your tool_allow_list binding); shown once', tags: ['trust'],
    },
    config: {
      auth: 'key', success: [201], validationCodes: DelegateCodes,
      errors: { 403: ['DELEGATION_FORBIDDEN', 'POLICY_BINDING_WRITE_SET_EXCEEDED'], 409: ['API_KEY_LIMIT_REACHED', 'POLICY_BINDING_CORRUPT'], 422: ['DELEGATION_WRITE_SET_INVALID'] },
    },
  }, async (request, reply) => {
    const issued = await delegation.delegate(agentOf(request).agentId, request.params.parent_agent_id, request.body);
    reply.header('cache-control', 'no-store'); // the key
    return reply.code(201).send(issued);
  });

  // ---- journal commitments ----
  app.post('/v1/me/journal/commit', {
    schema: {
      body: JournalCommitBody, response: { 201: JournalCommitResponse, ...errorResponses(409, 422) },
      summary: 'Commit the SHA-256 digest of your journal (only the digest is accepted); a trust log entry whose index proves when', tags: ['trust'],
    },
    config: {
      auth: 'key', scope: 'svc:memory', success: [201], inputRules: JournalCommitRules,
      errors: { 409: ['JOURNAL_COMMITMENT_DUPLICATE'], 422: ['JOURNAL_HASH_INVALID', 'JOURNAL_ATTESTATION_INVALID', 'JOURNAL_PREIMAGE_FORBIDDEN'] },
    },
  }, async (request, reply) => reply.code(201).send(await journal.commit(agentOf(request).agentId, (request.body ?? {}) as Record<string, unknown>)));

  app.get('/v1/me/journal/commitments', {
    schema: {
      querystring: JournalListQuery, response: { 200: JournalCommitmentsResponse, ...errorResponses(422) },
      summary: 'Your journal commitments, newest first (keyset pages)', tags: ['trust'],
    },
    config: { auth: 'key', scope: 'svc:memory', errors: { 422: ['INVALID_CURSOR'] } },
  }, async (request) => journal.list(agentOf(request).agentId, false, request.query));

  app.get('/v1/agents/:agent_id/journal/commitments', {
    schema: {
      params: AgentParams, querystring: JournalListQuery, response: { 200: JournalCommitmentsResponse, ...errorResponses(404, 422) },
      summary: 'An agent\'s journal commitments (public), newest first (keyset pages)', tags: ['trust'],
    },
    config: { auth: 'none', errors: { 404: ['AGENT_NOT_FOUND'], 422: ['INVALID_CURSOR'] } },
  }, async (request) => journal.list(request.params.agent_id, true, request.query));

  // ---- tool passports ----
  app.post('/v1/me/tools', {
    schema: {
      body: RegisterToolBody, response: { 201: ToolPassportResponse, ...errorResponses(409, 422) },
      summary: 'Register a tool passport (root key): name, description, optional Ed25519 public key, declared risk_class and model provenance', tags: ['trust'],
    },
    config: { auth: 'root', success: [201], validationCodes: ToolKeyCodes, errors: { 409: ['TOOL_PASSPORT_NAME_TAKEN', 'TOOL_PASSPORT_LIMIT_REACHED'], 422: ['INVALID_TOOL_PUBLIC_KEY'] } },
  }, async (request, reply) => reply.code(201).send(await tools.register(agentOf(request).agentId, request.body)));

  app.post('/v1/me/tools/:tool_id/rotate', {
    schema: {
      params: ToolParams, body: RotateToolBody, response: { 200: ToolPassportResponse, ...errorResponses(404, 409, 422) },
      summary: 'Rotate a tool passport\'s public key (root key)', tags: ['trust'],
    },
    config: { auth: 'root', validationCodes: ToolKeyCodes, errors: { 404: ['TOOL_PASSPORT_NOT_FOUND'], 409: ['TOOL_PASSPORT_REVOKED'], 422: ['INVALID_TOOL_PUBLIC_KEY'] } },
  }, async (request) => tools.rotate(agentOf(request).agentId, request.params.tool_id, request.body.public_key));

  app.post('/v1/me/tools/:tool_id/revoke', {
    schema: {
      params: ToolParams, response: { 200: ToolPassportResponse, ...errorResponses(404, 409) },
      summary: 'Revoke a tool passport (root key); its public read shows it revoked', tags: ['trust'],
    },
    config: { auth: 'root', errors: { 404: ['TOOL_PASSPORT_NOT_FOUND'], 409: ['TOOL_PASSPORT_REVOKED'] } },
  }, async (request) => tools.revoke(agentOf(request).agentId, request.params.tool_id));

  app.get('/v1/tools/:tool_id/passport', {
    schema: {
      params: ToolParams, response: { 200: ToolPassportResponse, ...errorResponses(404) },
      summary: 'A tool passport (public; did:svc:tool:<tool_id>), never private material', tags: ['trust'],
    },
    config: { auth: 'none', errors: { 404: ['TOOL_PASSPORT_NOT_FOUND'] } },
  }, async (request) => tools.passport(request.params.tool_id));
};
