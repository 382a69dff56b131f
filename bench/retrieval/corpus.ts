/**
 * The judged retrieval collection of bench/retrieval/hybrid.ts, generated deterministically (seeded)
 * from text written for this repository, so it can be shipped and rebuilt anywhere:
 *
 * - the 130 hand-written agent memories of dataset.json and their 107 reworded questions
 *   (`paraphrase`: few shared words with the answer);
 * - 2,000 generated operations notes (incidents, runbooks, decisions) about 60 services, each with
 *   its own error code, host and owner, padded with generic engineering sentences; 30 % are long
 *   (250–600 words, the distinctive fact placed in the back half, past what the model reads in one
 *   chunk), 15 % are written in UPPER CASE;
 * - 160 generated questions: 80 `exact` (they name the note's error code or host, as an agent
 *   pasting a log line would) and 80 `reworded` (the note's event told with other words, plus the
 *   service name, which 30+ notes share); 20 % of all questions are in upper case.
 *
 * Every question has one relevant document (binary judgement). Nothing here was taken from another
 * project's test collection.
 */
import { loadRetrievalDataset } from './eval';
import { rng } from './measure';

/**
 * `marks`: strings only this document holds where its answer is written (its key for a memory of
 * dataset.json; the event sentence and the error code of a generated note), so the blob bench can
 * tell which chunk of a file answers (compared case-insensitively, whitespace collapsed).
 */
export interface Doc { key: string; value: unknown; marks: string[] }
export interface Query { q: string; relevant: string; kind: 'paraphrase' | 'exact' | 'reworded' }


const SERVICES = ('billing-worker auth-gateway search-indexer payments-api ledger-sync notification-hub image-resizer report-builder '
  + 'session-store rate-limiter feature-flags audit-trail export-service import-pipeline geo-lookup email-relay sms-sender '
  + 'invoice-renderer tax-engine fraud-scorer catalog-api cart-service checkout-flow inventory-sync shipping-quotes '
  + 'webhook-dispatcher scheduler-core metrics-gateway log-shipper backup-agent dns-updater cert-renewer config-server '
  + 'secret-vault queue-broker cache-warmer cdn-purger thumbnail-farm video-transcoder pdf-renderer ocr-service translation-api '
  + 'recommendation-engine user-profile friend-graph chat-backend presence-service push-gateway analytics-etl warehouse-loader '
  + 'ml-trainer feature-store model-server ab-testing consent-manager gdpr-eraser identity-sync sso-bridge ldap-mirror').split(' ');
const PEOPLE = ['Priya', 'Mateo', 'Aiko', 'Jonas', 'Fatima', 'Lucas', 'Ingrid', 'Kwame', 'Elena', 'Tomasz', 'Mei', 'Rafael', 'Noor', 'Sven', 'Amara'];

/** [what the note says, how a question tells the same event with other words] — {s} is the service. */
const EVENTS: [string, string][] = [
  ['The nightly database backup of {s} failed because the disk filled up.', 'why did the overnight dump for {s} stop when storage ran out of space'],
  ['{s} leaked memory after the upgrade and was killed by the OOM killer every few hours.', 'which release made {s} use more and more RAM until the kernel terminated it'],
  ['TLS certificate for {s} expired and clients refused to connect.', 'clients of {s} rejected the handshake since its https credential had lapsed'],
  ['Deploys of {s} were rolled back after the p99 latency tripled.', 'the release of {s} was reverted because tail response times got three times slower'],
  ['{s} ran out of database connections during the Monday traffic peak.', 'pool exhaustion for {s} when load spiked at the start of the week'],
  ['A misconfigured feature flag sent all traffic of {s} to the canary.', 'a wrong toggle routed every request of {s} to the trial instance'],
  ['{s} dropped messages because the queue consumer crashed silently.', 'events lost in {s} after the worker reading the broker died without logging'],
  ['Clock skew on the hosts of {s} broke token validation.', 'time drift between machines of {s} made login credentials look invalid'],
  ['{s} hit the cloud provider API rate limit and stopped scaling.', 'autoscaling of {s} stalled when the vendor throttled our calls'],
  ['The cache of {s} served stale prices for two hours after a purge failed.', 'outdated amounts were shown by {s} for a couple of hours because invalidation did not happen'],
  ['{s} wrote duplicate rows when a retry was not idempotent.', 'repeated attempts in {s} created the same record twice'],
  ['Disk IO saturation on the volume of {s} made writes time out.', 'storage throughput of {s} was maxed out so saving data took too long'],
  ['{s} returned 500 errors because a required environment variable was missing after the migration.', 'after moving platforms {s} crashed on every request due to an absent setting'],
  ['A DNS change pointed {s} at the decommissioned cluster.', 'name resolution for {s} led to the retired set of servers'],
  ['{s} consumed the whole CPU quota because of a regex with catastrophic backtracking.', 'a pattern match in {s} pegged the processors at full usage'],
  ['Log volume of {s} grew tenfold and filled the shipping pipeline.', '{s} emitted ten times more diagnostics and clogged the forwarding system'],
  ['{s} deadlocked when two migrations held table locks in opposite order.', 'schema changes of {s} blocked each other waiting on locks forever'],
  ['Paging for {s} was silent because the alert route pointed at an old channel.', 'nobody was woken up for {s} since notifications went to an abandoned room'],
  ['{s} exposed internal stack traces in error responses to customers.', 'users of {s} could see debugging details of the code in failure messages'],
  ['A dependency upgrade changed the JSON number parsing of {s} and corrupted amounts.', 'after bumping a library {s} read decimal values wrongly and mangled money fields'],
];

const FILLER = [
  'The team reviewed the dashboards and the on-call notes.', 'Follow-up tickets were filed for the remaining work.',
  'We agreed to revisit the alert thresholds next quarter.', 'The runbook was updated with the commands that were used.',
  'Customers were informed through the status page.', 'Monitoring now covers the affected endpoints.',
  'The change went through the usual review and staging steps.', 'Load tests were repeated after the fix.',
  'Ownership of the component moved to the platform group.', 'A postmortem meeting is scheduled with all stakeholders.',
  'Metrics were exported to the weekly report.', 'The configuration lives in the infrastructure repository.',
  'Access to production was granted for the duration of the incident.', 'The backlog item has medium priority.',
  'Documentation of the service was out of date and has been refreshed.', 'Graphs showed the anomaly starting shortly after midnight.',
  'An engineer from the database team joined the call.', 'The service level objective was breached for the month.',
  'Rollout happens region by region with a pause between steps.', 'The vendor support case is still open.',
  'Several consumers depend on this service for their daily jobs.', 'The error budget policy applies to this team.',
  'Capacity planning for next year includes this component.', 'Security review found no data exposure.',
  'The timeline was reconstructed from chat messages and logs.', 'A feature freeze is in effect until the fix ships.',
];

const upper = (s: string) => s.toUpperCase();

export function buildCorpus(generated = 2000, seed = 20_261): { docs: Doc[]; queries: Query[] } {
  const r = rng(seed);
  const pick = <T>(xs: T[]) => xs[Math.floor(r() * xs.length)]!;
  const base = loadRetrievalDataset();
  const docs: Doc[] = base.memories.map((m) => ({ key: m.key, value: m.value, marks: [m.key] }));
  const queries: Query[] = base.questions.map((q) => ({ q: q.question, relevant: q.answer_key, kind: 'paraphrase' as const }));
  const combos = new Map<string, number>();
  const notes: { key: string; event: number; service: string; code: string; host: string; isUpper: boolean }[] = [];
  for (let i = 0; i < generated; i++) {
    const event = Math.floor(r() * EVENTS.length);
    const service = pick(SERVICES);
    const code = `${pick(['ERR', 'E', 'SVC', 'X'])}_${Math.floor(r() * 36 ** 4).toString(36).toUpperCase().padStart(4, '0')}`;
    const host = `${service.split('-')[0]}-${Math.floor(r() * 90 + 10)}.${pick(['eu', 'us', 'ap'])}${Math.floor(r() * 4 + 1)}.internal`;
    const long = r() < 0.3;
    const sentence = EVENTS[event]![0].replace('{s}', service);
    const fact = `${sentence} Error code ${code} was logged on ${host}. ${pick(PEOPLE)} handled it.`;
    const filler = (n: number) => Array.from({ length: n }, () => pick(FILLER)).join(' ');
    const body = long ? `${filler(Math.floor(r() * 20 + 15))} ${fact} ${filler(Math.floor(r() * 15 + 5))}` : `${fact} ${filler(Math.floor(r() * 3))}`;
    const isUpper = r() < 0.15;
    const key = `ops.${['incident', 'note', 'runbook', 'decision'][i % 4]}:${service}.${i}`;
    docs.push({ key, value: { title: `${service} ${['incident', 'note', 'runbook', 'decision'][i % 4]}`, text: isUpper ? upper(body) : body }, marks: [sentence, code] });
    const combo = `${event}|${service}`;
    combos.set(combo, (combos.get(combo) ?? 0) + 1);
    notes.push({ key, event, service, code, host, isUpper });
  }
  const unique = notes.filter((n) => combos.get(`${n.event}|${n.service}`) === 1);
  // An event sentence other notes share marks none of them.
  const said = new Map<string, number>();
  for (const d of docs) if (d.marks.length === 2) said.set(d.marks[0]!, (said.get(d.marks[0]!) ?? 0) + 1);
  for (const d of docs) if (d.marks.length === 2 && said.get(d.marks[0]!)! > 1) d.marks = [d.marks[1]!];
  const exact: Query[] = [];
  const reworded: Query[] = [];
  for (let i = 0; i < notes.length && exact.length < 80; i += 7) {
    const n = notes[i]!;
    exact.push({ q: r() < 0.5 ? `what happened with ${n.code}` : `incident on ${n.host}`, relevant: n.key, kind: 'exact' });
  }
  for (let i = 0; i < unique.length && reworded.length < 80; i += Math.max(1, Math.floor(unique.length / 80))) {
    const n = unique[i]!;
    reworded.push({ q: EVENTS[n.event]![1].replace('{s}', n.service), relevant: n.key, kind: 'reworded' });
  }
  for (const q of [...queries, ...exact, ...reworded]) if (r() < 0.2) q.q = upper(q.q);
  return { docs, queries: [...queries, ...exact, ...reworded] };
}
