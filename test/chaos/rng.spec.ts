import { createRng, forkRng } from './rng.js';

describe(createRng.name, () => {
  const draws = (seed: number) => {
    const sut = createRng(seed);
    return [sut.next(), sut.int(1, 6), sut.pick(['a', 'b', 'c']), sut.chance(0.5), sut.int(-5, 5)];
  };

  it('gives the same values for the same seed', () => {
    expect(draws(17)).toEqual(draws(17));
  });

  it('gives other values for another seed', () => {
    expect(draws(17)).not.toEqual(draws(18));
  });

  it('keeps next() in [0, 1) and int() within its inclusive bounds, reaching both', () => {
    const sut = createRng(1);
    const seen = new Set<number>();
    for (let i = 0; i < 2000; i++) {
      const x = sut.next();
      expect(x).toBeGreaterThanOrEqual(0);
      expect(x).toBeLessThan(1);
      const n = sut.int(2, 8);
      expect(n).toBeGreaterThanOrEqual(2);
      expect(n).toBeLessThanOrEqual(8);
      seen.add(n);
    }
    expect([...seen].sort()).toEqual([2, 3, 4, 5, 6, 7, 8]);
  });

  it.each([0, 0.25, 0.75, 1])('answers chance(%p) true about that often', (p) => {
    const sut = createRng(99);
    let yes = 0;
    for (let i = 0; i < 4000; i++) if (sut.chance(p)) yes++;
    expect(Math.abs(yes / 4000 - p)).toBeLessThan(0.03);
  });

  it.each([
    [3, 2],
    [1.5, 3],
  ])('throws RangeError for int(%p, %p)', (min, max) => {
    expect(() => createRng(1).int(min, max)).toThrow(RangeError);
  });

  it('throws RangeError when picking from an empty list', () => {
    expect(() => createRng(1).pick([])).toThrow(RangeError);
  });
});

describe(forkRng.name, () => {
  it('gives a stream that does not depend on what the parent draws afterwards', () => {
    const a = createRng(5);
    const forkA = forkRng(a);
    a.next();
    const b = createRng(5);
    const forkB = forkRng(b);
    expect([forkA.next(), forkA.int(0, 100)]).toEqual([forkB.next(), forkB.int(0, 100)]);
  });
});
