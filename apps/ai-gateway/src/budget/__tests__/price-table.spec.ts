import { costOf, ledgerMonthOf, parsePriceTable } from '../price-table.js';

describe('parsePriceTable', () => {
  it('reads model prices', () => {
    expect(parsePriceTable('{"m":{"input_usd_per_mtok":0.15,"output_usd_per_mtok":0.6}}')).toEqual({ m: { input_usd_per_mtok: 0.15, output_usd_per_mtok: 0.6 } });
  });

  it.each([
    ['not an object', '[]'],
    ['a missing price', '{"m":{"input_usd_per_mtok":1}}'],
    ['a negative price', '{"m":{"input_usd_per_mtok":-1,"output_usd_per_mtok":1}}'],
    ['a string price', '{"m":{"input_usd_per_mtok":"1","output_usd_per_mtok":1}}'],
  ])('refuses %s', (_name, json) => {
    expect(() => parsePriceTable(json)).toThrow();
  });
});

describe('costOf', () => {
  const table = parsePriceTable('{"m":{"input_usd_per_mtok":0.15,"output_usd_per_mtok":0.6}}');

  it.each([
    [1_000_000, 0, 0.15],
    [0, 1_000_000, 0.6],
    [1200, 300, 0.00036],
    [1, 1, 0.000001],
  ])('prices %i prompt + %i completion tokens at %d USD', (prompt, completion, usd) => {
    expect(costOf(table, 'm', prompt, completion)).toBeCloseTo(usd, 6);
  });

  it('has no cost for a model without a price', () => {
    expect(costOf(table, 'other', 10, 10)).toBeUndefined();
  });
});

describe('ledgerMonthOf', () => {
  it.each([
    ['2026-10-31T23:59:59.999Z', '2026-10'],
    ['2026-11-01T00:00:00.000Z', '2026-11'],
    // 21:30 on Dec 31 in São Paulo is already January in UTC: budgets run on UTC months.
    ['2026-12-31T21:30:00-03:00', '2027-01'],
  ])('puts %s in %s', (at, month) => {
    expect(ledgerMonthOf(new Date(at))).toBe(month);
  });
});
