/**
 * The reputation model (beta_v1), pure arithmetic. Each rated interaction adds its weight to the
 * Beta distribution's alpha (approved) or beta (error; rejected adds a quarter of it), from a
 * Beta(1, 1) prior. Weights decay with a 30-day half-life for the score, and linearly to zero over
 * 90 days for the per-category sub-signals. Projections keep decayed sums (so a read never scans
 * the events) and this file turns them into the figures a reader sees.
 */
import type betaQuantileFn from '@stdlib/stats-base-dists-beta-quantile';
import { lazyModule } from '../../lib/lazy-module';

/** @stdlib's Beta quantile, loaded with the first interval computed (about a hundred small modules). */
const betaQuantile = lazyModule<typeof betaQuantileFn>('@stdlib/stats-base-dists-beta-quantile');
import { DAY_MS } from '../../lib/utc';
import { isElevated } from '../trust/levels';

export const OUTCOMES = ['approved', 'error', 'rejected'] as const;
export type Outcome = (typeof OUTCOMES)[number];
export const CATEGORIES = ['task_completion', 'accuracy', 'responsiveness'] as const;
export type Category = (typeof CATEGORIES)[number];

export const PRIOR_ALPHA = 1;
export const PRIOR_BETA = 1;
export const HALF_LIFE_DAYS = 30;
export const HALF_LIFE_MS = HALF_LIFE_DAYS * DAY_MS;
export const SUB_SIGNAL_DECAY_DAYS = 90;
export const SUB_SIGNAL_DECAY_MS = SUB_SIGNAL_DECAY_DAYS * DAY_MS;
/** Share of a rejected interaction's weight that goes to beta. */
export const REJECTED_BETA_SHARE = 0.25;
/** Below this many counted interactions a category's sub-signal is null, and the score is `insufficient_data`. */
export const MIN_INTERACTIONS = 3;
/** Disputes one agent may file per UTC day. */
export const DISPUTES_PER_DAY = 3;
/** Weight of a rater that is staked, sponsored or established; others count half (cheap identities count less). */
export const FULL_RATER_WEIGHT = 1;
export const CHEAP_RATER_WEIGHT = 0.5;

export function raterWeight(raterTrustLevels: readonly string[]): number {
  return isElevated(raterTrustLevels) ? FULL_RATER_WEIGHT : CHEAP_RATER_WEIGHT;
}

/** What one event adds to (alpha, beta) at full strength. */
export function contribution(outcome: Outcome, weight: number): { a: number; b: number } {
  if (outcome === 'approved') return { a: weight, b: 0 };
  if (outcome === 'error') return { a: 0, b: weight };
  return { a: 0, b: REJECTED_BETA_SHARE * weight };
}

/** 2^(-(to - from) / half-life): how much of a weight at `from` is left at `to`. */
export const halfLifeFactor = (from: number, to: number): number => 2 ** (-(to - from) / HALF_LIFE_MS);

/** Exponentially decayed sums as of `ref_at`. */
export interface DecayedSums { alpha_sum: number; beta_sum: number; ref_at: number }

/** Adds (sign 1) or takes back (sign -1) an event at `at` to the sums; the reference moves forward only. */
export function withEvent(s: DecayedSums, outcome: Outcome, weight: number, at: number, sign: 1 | -1): DecayedSums {
  const ref = Math.max(s.ref_at, at);
  const carry = halfLifeFactor(s.ref_at, ref);
  const add = halfLifeFactor(at, ref);
  const c = contribution(outcome, weight);
  // A take-back can leave a rounding crumb below zero; the sums are never negative.
  return {
    alpha_sum: Math.max(0, s.alpha_sum * carry + sign * c.a * add),
    beta_sum: Math.max(0, s.beta_sum * carry + sign * c.b * add),
    ref_at: ref,
  };
}

/** Alpha and beta at `now`, prior included. */
export function betaAt(s: DecayedSums, now: number): { alpha: number; beta: number } {
  const f = halfLifeFactor(s.ref_at, now);
  return { alpha: PRIOR_ALPHA + s.alpha_sum * f, beta: PRIOR_BETA + s.beta_sum * f };
}

const round = (x: number, digits = 6): number => Number(x.toFixed(digits));

/** Beta mean, variance and the 95 % equal-tailed credible interval. */
export function betaSummary(alpha: number, beta: number) {
  const n = alpha + beta;
  return {
    score: alpha / n,
    variance: (alpha * beta) / (n * n * (n + 1)),
    confidence_interval: [betaQuantile()(0.025, alpha, beta), betaQuantile()(0.975, alpha, beta)] as [number, number],
  };
}

export const REPUTATION_NOTICE = 'score is the Beta mean alpha/(alpha+beta) over rated interactions in the current custody epoch '
  + '(prior Beta(1,1); approved adds to alpha, error to beta, rejected a quarter to beta; weights halve every 30 days; '
  + 'raters that are not staked, sponsored or established count half). Each rating is an entry of the public trust log.';

/** The score (Beta mean, 6 decimals) at `now`: what the reputation object shows as `score`. */
export function scoreAt(s: DecayedSums, now: number): number {
  const { alpha, beta } = betaAt(s, now);
  return round(alpha / (alpha + beta));
}

/** The reputation object of a passport, agent card and history. */
export function reputationObject(s: DecayedSums, counts: { event_count: number; signal_count: number; last_event_at: number | null }, now: number) {
  const { alpha, beta } = betaAt(s, now);
  const sum = betaSummary(alpha, beta);
  return {
    score: round(sum.score),
    status: counts.signal_count >= MIN_INTERACTIONS ? 'scored' : 'insufficient_data',
    variance: round(sum.variance, 8),
    confidence_interval: [round(sum.confidence_interval[0]), round(sum.confidence_interval[1])],
    beta_alpha: round(alpha),
    beta_beta: round(beta),
    event_count: counts.event_count,
    signal_count: counts.signal_count,
    beta_half_life_days: HALF_LIFE_DAYS,
    scoring_model: 'beta_v1',
    decay_half_life_days: SUB_SIGNAL_DECAY_DAYS,
    last_updated: counts.last_event_at === null ? null : new Date(counts.last_event_at).toISOString(),
    notice: REPUTATION_NOTICE,
  };
}

/** Per-day sums of one category: weight and weight × (ms into the day), per outcome. */
export interface DayBucket {
  day_start: number;
  /** Counted ratings of the day. */
  n: number;
  approved_w: number; approved_wt: number;
  error_w: number; error_wt: number;
  rejected_w: number; rejected_wt: number;
}

/** One event still inside a partly expired day (the oldest day of the 90-day window). */
export interface WindowEvent { outcome: Outcome; weight: number; at: number }

/** 1 - age/90 days, or 0 once 90 days old. */
export const linearFactor = (at: number, now: number): number => Math.max(0, Math.min(1, 1 - (now - at) / SUB_SIGNAL_DECAY_MS));

/**
 * Linearly decayed (alpha, beta) of one category: days wholly inside the window from their sums
 * (Σ w·(1 - (now - t)/D) = W·(1 - (now - day)/D) + WT/D), the day the window starts in from its events.
 */
export function linearBeta(buckets: DayBucket[], edgeEvents: WindowEvent[], now: number): { alpha: number; beta: number; interactions: number } {
  const from = now - SUB_SIGNAL_DECAY_MS;
  let a = 0;
  let b = 0;
  let interactions = 0;
  for (const d of buckets) {
    if (d.day_start <= from) continue; // the edge day comes from its events
    interactions += d.n;
    const base = 1 - (now - d.day_start) / SUB_SIGNAL_DECAY_MS;
    const part = (w: number, wt: number) => w * base + wt / SUB_SIGNAL_DECAY_MS;
    a += part(d.approved_w, d.approved_wt);
    b += part(d.error_w, d.error_wt) + REJECTED_BETA_SHARE * part(d.rejected_w, d.rejected_wt);
  }
  for (const e of edgeEvents) {
    if (e.at <= from) continue;
    interactions++;
    const f = linearFactor(e.at, now);
    const c = contribution(e.outcome, e.weight);
    a += c.a * f;
    b += c.b * f;
  }
  return { alpha: PRIOR_ALPHA + Math.max(0, a), beta: PRIOR_BETA + Math.max(0, b), interactions };
}

/** A category's sub-signal, or null below the minimum of counted interactions inside the 90-day window. */
export function subSignal(linear: { alpha: number; beta: number; interactions: number }) {
  const base = subSignalPoint(linear);
  if (!base) return null;
  const s = betaSummary(linear.alpha, linear.beta);
  return {
    score: base.score,
    beta_alpha: base.beta_alpha,
    beta_beta: base.beta_beta,
    confidence_interval: [round(s.confidence_interval[0]), round(s.confidence_interval[1])],
    interaction_count: base.interaction_count,
    decay: base.decay,
  };
}

/**
 * A sub-signal without its credible interval (the Beta quantiles cost about 0.25 ms a category):
 * what a directory row shows, so a page of well-rated agents stays cheap. Same score, alpha, beta.
 */
export function subSignalPoint(linear: { alpha: number; beta: number; interactions: number }) {
  const { interactions } = linear;
  if (interactions < MIN_INTERACTIONS) return null;
  return {
    score: round(linear.alpha / (linear.alpha + linear.beta)),
    beta_alpha: round(linear.alpha),
    beta_beta: round(linear.beta),
    interaction_count: interactions,
    decay: 'linear_90_days',
  };
}

/** Start of the UTC day holding `at`. */
export const dayStart = (at: number): number => Math.floor(at / DAY_MS) * DAY_MS;
