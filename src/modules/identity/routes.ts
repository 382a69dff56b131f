import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Static } from 'typebox';
import { agentOf } from '../../http/auth';
import type { EnvelopeBuilder } from '../../http/envelope';
import {
  AgentIdParams, ChallengeBody, EphemeralBody, EphemeralValidationCodes, RotateBody, RotateValidationCodes, SelfReportedBody, CreateKeyBody, CreateKeyValidationCodes, KeyIdParams, ChallengeValidationCodes, DescriptionBody, MeResponse, RegisterBody, RegisterValidationCodes, VerifyBody, VerifyValidationCodes,
  AdminAgentResponse, ChallengeResponse, CreatedKeyResponse, DescriptionResponse, EphemeralResponse, KeyListResponse, NoContent, PassportResponse, RegisterResponse, RevokeResponse, RotateResponse, SessionResponse,
} from './schemas';
import type { IdentityService } from './service';

export interface IdentityRouteDeps {
  identity: IdentityService;
  envelope: EnvelopeBuilder;
  baseUrl: string;
}

const KEY_GENERATION_WARNING =
  'svc generated this Ed25519 keypair for you. The private_key is shown only in this response and is not stored: save it now. ' +
  'Prefer generating your own keypair and sending only passport_public_key.';

export const identityRoutes = (deps: IdentityRouteDeps): FastifyPluginAsyncTypebox => async (app) => {
  const { identity, envelope, baseUrl } = deps;

  app.post('/v1/register', {
    schema: { body: RegisterBody, summary: 'Register an agent: API key and Ed25519 passport', response: { 201: RegisterResponse } },
    config: { auth: 'none', success: [201], errors: { 409: ['AGENT_ALREADY_REGISTERED'] }, validationCodes: RegisterValidationCodes },
  }, async (request, reply) => {
    const r = await identity.register(request.body);
    // The root key (and a generated private key) are in this answer only: no cache may keep it.
    reply.header('cache-control', 'no-store');
    const body: Record<string, unknown> = {
      status: 'success',
      api_key: r.apiKey,
      agent_id: r.agentId,
      agent_name: request.body.agent_name,
      tier: r.tier,
      passport: r.passport,
    };
    if (r.passport.private_key) body.key_generation_warning = KEY_GENERATION_WARNING;
    Object.assign(body, {
      recovery: r.recovery,
      referral: r.referral,
      directory_opt_in_url: `${baseUrl}/v1/agents/passport/description`,
      directory_value:
        'Describe yourself and opt in to the directory: POST directory_opt_in_url with bio, skills and listed=true. A listed agent ' +
        'with a bio gets a full agent card (a2a_agent_card_url) showing its passport-verified capabilities, skills and reputation. Unlisted by default.',
      a2a_agent_card_url: `${baseUrl}/v1/agents/${r.agentId}/agent-card`,
      _svc: await envelope.build({ tier: r.tier }),
    });
    return reply.code(201).send(body as Static<typeof RegisterResponse>);
  });

  app.get('/v1/me', { schema: { summary: 'The authenticated agent record', response: { 200: MeResponse } }, config: { auth: 'key', scope: 'any' } }, async (request) =>
    identity.me(agentOf(request)),
  );

  app.get('/v1/agents/:agent_id/passport', {
    schema: { params: AgentIdParams, summary: 'Public passport of an agent', response: { 200: PassportResponse } },
    config: { auth: 'none', errors: { 404: ['AGENT_NOT_FOUND'] } },
  }, async (request) => ({ status: 'success', passport: await identity.publicPassport(request.params.agent_id) }));

  app.post('/v1/auth/passport/challenge', {
    schema: { body: ChallengeBody, summary: 'Get a single-use challenge to sign with the passport key', response: { 200: ChallengeResponse } },
    config: { auth: 'none', errors: { 403: ['PASSPORT_REVOKED'], 404: ['AGENT_NOT_FOUND'] }, validationCodes: ChallengeValidationCodes },
  }, async (request) => identity.createChallenge(request.body.agent_id, request.body.purpose));

  app.post('/v1/auth/passport/verify', {
    schema: { body: VerifyBody, summary: 'Exchange a signed challenge for a session token (svc_session_, 3600 s)', response: { 200: SessionResponse } },
    config: { auth: 'none', errors: { 401: ['PASSPORT_SIGNATURE_INVALID', 'CHALLENGE_EXPIRED'], 403: ['PASSPORT_REVOKED'], 404: ['AGENT_NOT_FOUND', 'CHALLENGE_NOT_FOUND'], 409: ['CHALLENGE_ALREADY_USED'] }, validationCodes: VerifyValidationCodes },
  }, async (request, reply) => {
    reply.header('cache-control', 'no-store'); // the session token
    return identity.verifyChallenge(request.body);
  });

  app.post('/v1/agents/passport/description', {
    schema: { body: DescriptionBody, summary: 'Describe your agent (bio, skills) and opt in to the directory (listed); the public passport after it', response: { 200: DescriptionResponse } },
    config: { auth: 'key', errors: { 403: ['PASSPORT_REVOKED'] } },
  }, async (request) => identity.describe(agentOf(request), request.body));

  app.post('/v1/agents/passport/capabilities', {
    schema: { body: SelfReportedBody, summary: 'Set your self-reported capabilities text (shown on the passport with self_reported_notice; never verified); the public passport after it', response: { 200: PassportResponse } },
    config: { auth: 'key', errors: { 403: ['PASSPORT_REVOKED'] } },
  }, async (request) => identity.selfReport(agentOf(request), request.body.self_reported));

  app.post('/v1/me/passport/revoke', {
    schema: { summary: 'Revoke your passport (root key): challenges and session tokens stop working', response: { 200: RevokeResponse } },
    config: { auth: 'root', errors: { 409: ['PASSPORT_REVOKED'] } },
  }, async (request) => identity.revokePassport(agentOf(request)));

  app.post('/v1/me/passport/rotate', {
    schema: {
      body: RotateBody,
      summary: 'Rotate your passport key (root key): the new public key and its signature over a fresh challenge\'s sign_payload; the old key verifies challenges for 300 s more, then never',
      response: { 200: RotateResponse },
    },
    config: {
      auth: 'root', validationCodes: RotateValidationCodes,
      errors: {
        401: ['PASSPORT_SIGNATURE_INVALID', 'CHALLENGE_EXPIRED'], 403: ['PASSPORT_REVOKED'], 404: ['CHALLENGE_NOT_FOUND'],
        409: ['CHALLENGE_ALREADY_USED', 'PASSPORT_KEY_UNCHANGED'],
      },
    },
  }, async (request) => identity.rotatePassport(agentOf(request), request.body));

  app.post('/v1/auth/passport/ephemeral', {
    schema: {
      body: EphemeralBody,
      summary: 'An ephemeral passport for a stateless sandbox: its own id, at most 3600 s, trust level ephemeral, and a session token bound to it (root key as Bearer, or agent_id + challenge_id + signature)',
      response: { 201: EphemeralResponse },
    },
    config: {
      auth: 'optional', bearer: 'root', success: [201], validationCodes: EphemeralValidationCodes,
      errors: {
        401: ['PASSPORT_SIGNATURE_INVALID', 'CHALLENGE_EXPIRED'], 403: ['PASSPORT_REVOKED'], 404: ['CHALLENGE_NOT_FOUND'],
        409: ['CHALLENGE_ALREADY_USED', 'EPHEMERAL_PASSPORT_LIMIT_REACHED'], 422: ['PASSPORT_SIGNATURE_REQUIRED', 'EPHEMERAL_CREDENTIALS_CONFLICT'],
      },
    },
    // With the root key nothing else is needed: no body at all (or JSON null) is an empty one.
    preValidation: async (request) => {
      if (request.body === undefined || request.body === null) request.body = {};
    },
  }, async (request, reply) => {
    const issued = await identity.issueEphemeral(request.auth, request.body);
    reply.header('cache-control', 'no-store'); // the session token
    return reply.code(201).send(issued);
  });

  app.post('/v1/me/keys', {
    schema: { body: CreateKeyBody, summary: 'Create a scoped API key (root key): limited to capability scopes, optional label and expiry; the key is shown once', response: { 201: CreatedKeyResponse } },
    config: { auth: 'root', success: [201], errors: { 409: ['API_KEY_LIMIT_REACHED'] }, validationCodes: CreateKeyValidationCodes },
  }, async (request, reply) => {
    const created = await identity.createScopedKey(agentOf(request), request.body);
    reply.header('cache-control', 'no-store'); // the key
    return reply.code(201).send(created);
  });

  app.get('/v1/me/keys', {
    schema: { summary: 'Your scoped API keys (root key): ids, scopes, labels, expiry and revocation, never the secrets', response: { 200: KeyListResponse } },
    config: { auth: 'root' },
  }, async (request) => identity.listScopedKeys(agentOf(request)));

  app.delete('/v1/me/keys/:key_id', {
    schema: { params: KeyIdParams, summary: 'Revoke a scoped API key (root key); it stops working at once', response: { 204: NoContent } },
    config: { auth: 'root', success: [204], errors: { 404: ['API_KEY_NOT_FOUND'] } },
  }, async (request, reply) => {
    await identity.revokeScopedKey(agentOf(request), request.params.key_id);
    return reply.code(204).send();
  });

  app.get('/admin/agents/:agent_id', {
    schema: { params: AgentIdParams, summary: 'Operator view of an agent (admin)', response: { 200: AdminAgentResponse } },
    config: { auth: 'admin', errors: { 404: ['AGENT_NOT_FOUND'] } },
  }, async (request) => identity.adminView(request.params.agent_id));
};
