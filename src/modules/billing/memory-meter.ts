/** Adapter: the memory module's MemoryMeter port, served by the metering service. */
import type { Metering } from './metering';

export interface MemoryMeterPort {
  chargeWrite(agentId: string): Promise<{ refund(): Promise<void>; usage?: Record<string, unknown> }>;
}

export function memoryMeterFrom(metering: Metering): MemoryMeterPort {
  return {
    async chargeWrite(agentId) {
      const charge = await metering.charge(agentId, 'memory_write');
      return { refund: () => charge.refund(), usage: { ...charge.usage } };
    },
  };
}
