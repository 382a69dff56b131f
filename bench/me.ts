import { drive, registerAgent, report, startBaseline, startSvc } from './harness';

/** Authenticated GET /v1/me vs a bare Fastify route, same process, same run. Target: ≥ 60%. */
const baseline = await startBaseline();
const svc = await startSvc();
try {
  const { apiKey } = await registerAgent(svc.url);
  // Warm both up, then measure baseline, subject, baseline again (average the two baselines).
  await drive('warmup', { url: `${baseline.url}/bare`, duration: 2 });
  await drive('warmup', { url: `${svc.url}/v1/me`, duration: 2, headers: { authorization: `Bearer ${apiKey}` } });
  const b1 = await drive('bare Fastify route', { url: `${baseline.url}/bare` });
  const me = await drive('GET /v1/me (authenticated)', { url: `${svc.url}/v1/me`, headers: { authorization: `Bearer ${apiKey}` } });
  const b2 = await drive('bare Fastify route', { url: `${baseline.url}/bare` });
  const base = { ...b1, requestsPerSecond: Math.round((b1.requestsPerSecond + b2.requestsPerSecond) / 2) };
  console.log(report(base, me));
} finally {
  await svc.close();
  await baseline.close();
}
