/** Adapter: the memory module's MemoryMeter port, served by the metering service inside the write's transaction. */
import type { Transaction } from 'kysely';
import type { Database } from '../../infra/db/schema';
import type { Metering } from './metering';

export interface MemoryMeterPort {
  chargeWrite(trx: Transaction<Database>, agentId: string, tier: string): Promise<{ committed(): Promise<object | undefined> }>;
}

export function memoryMeterFrom(metering: Metering): MemoryMeterPort {
  return {
    // The charge itself: its committed() is what the port asks for.
    chargeWrite: (trx, agentId, tier) => metering.chargeWithin(trx, agentId, 'memory_write', { tier }),
  };
}
