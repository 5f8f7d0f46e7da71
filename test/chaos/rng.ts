import { type RandomGenerator, unsafeUniformIntDistribution, xoroshiro128plus } from 'pure-rand';
import type { Rng } from './types.js';

/** 2^32: `next()` draws a 32-bit integer and scales it into [0, 1). */
const TWO_POW_32 = 0x1_0000_0000;

/**
 * The harness's seeded randomness (issue 17: "a failing seed replays the same run"): pure-rand's
 * xoroshiro128+ behind our `Rng`. The same seed and the same sequence of calls give the same values
 * on every machine and Node version.
 * @throws RangeError from `int` when `min > max` or a bound is not an integer, and from `pick` on an empty list
 */
export function createRng(seed: number): Rng {
  const generator: RandomGenerator = xoroshiro128plus(seed | 0);
  const int = (min: number, max: number): number => {
    if (!Number.isInteger(min) || !Number.isInteger(max) || min > max) throw new RangeError(`int(${min}, ${max}): bounds must be integers with min <= max`);
    return unsafeUniformIntDistribution(min, max, generator);
  };
  return {
    next: () => int(0, TWO_POW_32 - 1) / TWO_POW_32,
    int,
    pick<T>(items: readonly T[]): T {
      if (items.length === 0) throw new RangeError('pick from an empty list');
      return items[int(0, items.length - 1)];
    },
    chance(p: number): boolean {
      return int(0, TWO_POW_32 - 1) / TWO_POW_32 < p;
    },
  };
}

/**
 * An independent stream derived from `rng` (one draw of it), so that each consumer (one per fault
 * kind, the workload) sees the same values whatever the others draw and in which order.
 */
export function forkRng(rng: Rng): Rng {
  return createRng(rng.int(0, 0x7fff_ffff));
}
