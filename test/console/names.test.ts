import { describe, expect, it } from 'vitest';
import { duration } from '../../console/src/ui/names';

/** How long a task took, as the overview, the project's table and the task page write it. */
describe('duration', () => {
  const at = (ms: number) => new Date(Date.UTC(2026, 11, 4, 3, 0, 0) + ms).toISOString();
  it('writes a tenth of a second under 10 s, never "0 s" for a task that ran', () => {
    expect(duration(at(0), at(0))).toBe('< 0.1 s');
    expect(duration(at(0), at(30))).toBe('< 0.1 s');
    expect(duration(at(0), at(50))).toBe('0.1 s');
    expect(duration(at(0), at(560))).toBe('0.6 s');
    expect(duration(at(0), at(9_949))).toBe('9.9 s');
  });
  it('writes whole seconds from 10 s, then minutes and hours; nothing while it has not ended', () => {
    expect(duration(at(0), at(9_950))).toBe('10 s');
    expect(duration(at(0), at(65_000))).toBe('1 min 5 s');
    expect(duration(at(0), at(3_725_000))).toBe('1 h 2 min');
    expect(duration(at(0), null)).toBeUndefined();
  });
});
