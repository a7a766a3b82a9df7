/**
 * The machine files' day (logs/machine-files.ts `dayOf`): a line's time as `toISOString` writes it gives its
 * first 10 characters without a Date; any other form of a time is read as a date and gives its UTC day.
 */
import { describe, expect, it } from 'vitest';
import { dayOf } from '../../logs/machine-files';

describe('dayOf', () => {
  it("is the UTC day of a line's ISO time, of other forms of a time and of a Date", () => {
    expect(dayOf('2026-11-26T23:59:59.999Z')).toBe('2026-11-26');
    expect(dayOf(new Date('2026-11-26T23:59:59.999Z').toISOString())).toBe('2026-11-26');
    // not toISOString's form: read as a date, its UTC day
    expect(dayOf('2026-11-26T23:30:00.000-02:00')).toBe('2026-11-27');
    expect(dayOf('2026-11-26T23:30:00Z')).toBe('2026-11-26');
    expect(dayOf('Thu, 26 Nov 2026 23:30:00 GMT')).toBe('2026-11-26');
    expect(dayOf(new Date(Date.UTC(2026, 0, 1, 0, 0, 0)))).toBe('2026-01-01');
    expect(() => dayOf('not a time at all, 24 ch')).toThrow(RangeError);
  });
});
