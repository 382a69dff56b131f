/** Time source. Everything that depends on "now" takes a Clock so tests can move time. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number;
}

export const systemClock: Clock = { now: () => Date.now() };

/** A clock that only moves when told to (tests). */
export class ManualClock implements Clock {
  constructor(private current: number = Date.UTC(2026, 10, 21, 12, 0, 0)) {}
  now(): number {
    return this.current;
  }
  set(ms: number): void {
    this.current = ms;
  }
  advance(ms: number): void {
    this.current += ms;
  }
  advanceSeconds(s: number): void {
    this.current += s * 1000;
  }
  advanceDays(d: number): void {
    this.current += d * 86_400_000;
  }
}

export const iso = (ms: number): string => new Date(ms).toISOString();
