/** The reputation part of an agent's decision trace: the score, its inputs and the log entries behind them. */
import type { TraceSection } from '../trust/admin';
import { REPUTATION_NOTICE } from './model';
import type { ReputationService } from './service';
import type { ReputationStore } from './store';

/** Entries listed per fact (the newest); the counts say how many there are in all. */
const MAX_LISTED = 100;

export function reputationTrace(service: ReputationService, store: ReputationStore): TraceSection {
  return async (agentId, epoch, now) => {
    const [{ reputation }, idx] = await Promise.all([service.standing(agentId, epoch, now, false), store.traceIndexes(agentId, epoch, MAX_LISTED)]);
    return {
      reputation_score: {
        value: reputation.score,
        rule: REPUTATION_NOTICE,
        inputs: { beta_alpha: reputation.beta_alpha, beta_beta: reputation.beta_beta, event_count: reputation.event_count, signal_count: reputation.signal_count, epoch },
        log_indexes: idx.events,
        suppressed_event_log_indexes: idx.suppressed,
        upheld_dispute_log_indexes: idx.upheld,
        dismissed_dispute_log_indexes: idx.dismissed,
      },
      reputation_status: {
        value: reputation.status,
        rule: 'scored with at least 3 counted (not suppressed) interactions in the current epoch, else insufficient_data',
        log_indexes: idx.events,
      },
    };
  };
}
