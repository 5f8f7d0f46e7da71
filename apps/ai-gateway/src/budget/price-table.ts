/** Price of one model, USD per million tokens. */
export interface ModelPrice {
  input_usd_per_mtok: number;
  output_usd_per_mtok: number;
}

/** Model name → price (config `AI_PRICE_TABLE`). */
export type PriceTable = Readonly<Record<string, ModelPrice>>;

const TOKENS_PER_MTOK = 1_000_000;

/**
 * Parses and checks `AI_PRICE_TABLE`.
 * @throws Error saying which entry is wrong
 */
export function parsePriceTable(json: string): PriceTable {
  const raw: unknown = JSON.parse(json);
  if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw new Error('must be a JSON object of model → price');
  const table: Record<string, ModelPrice> = {};
  for (const [model, price] of Object.entries(raw as Record<string, unknown>)) {
    const p = price as Partial<ModelPrice> | null;
    const ok = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v >= 0;
    if (!p || !ok(p.input_usd_per_mtok) || !ok(p.output_usd_per_mtok)) {
      throw new Error(`price of "${model}" needs input_usd_per_mtok and output_usd_per_mtok as non-negative numbers`);
    }
    table[model] = { input_usd_per_mtok: p.input_usd_per_mtok!, output_usd_per_mtok: p.output_usd_per_mtok! };
  }
  return table;
}

/**
 * Cost of one call in USD, rounded to 6 decimals (the ledger column's scale); undefined when the
 * table has no price for the model.
 */
export function costOf(table: PriceTable, model: string, promptTokens: number, completionTokens: number): number | undefined {
  const price = table[model];
  if (!price) return undefined;
  const usd = (promptTokens * price.input_usd_per_mtok + completionTokens * price.output_usd_per_mtok) / TOKENS_PER_MTOK;
  return Math.round(usd * 1e6) / 1e6;
}

/** The ledger month of an instant: `YYYY-MM` in UTC (budgets run per calendar month, UTC). */
export function ledgerMonthOf(at: Date): string {
  return at.toISOString().slice(0, 7);
}
