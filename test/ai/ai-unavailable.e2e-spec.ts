import { AI_DEFAULT_OUTPUT_SCHEMAS } from '@touchpoint/contracts';
import { type AiWorld, startAiWorld } from './ai-world.js';

describe('ai.run with no model configured', () => {
  let w: AiWorld;
  let fetchCalls: string[];
  const realFetch = globalThis.fetch;

  beforeAll(async () => {
    // Spy before ai-gateway starts: an SDK client would capture the global fetch when built.
    fetchCalls = [];
    globalThis.fetch = ((input: Parameters<typeof fetch>[0], init?: RequestInit) => {
      fetchCalls.push(String(input instanceof Request ? input.url : input));
      return realFetch(input, init);
    }) as typeof fetch;
    // The sandbox runs, but ai-gateway is told there is no model.
    w = await startAiWorld('ai_nomodel', { AI_BASE_URL: 'none' });
  });
  afterAll(async () => {
    globalThis.fetch = realFetch;
    await w.close();
  });

  it('answers unavailable at once, without a network call, and stores it under the key', async () => {
    const request = {
      organization_id: 'org-nomodel',
      kind: 'conversation_summary' as const,
      idempotency_key: 'summary:instance-1',
      input: { messages: [{ direction: 'inbound' as const, text: 'Can you send the invoice?' }] },
      output_schema: AI_DEFAULT_OUTPUT_SCHEMAS.conversation_summary,
      timeout_ms: 5000,
    };
    const started = Date.now();
    const result = await w.ai.run(request);
    const elapsed = Date.now() - started;
    // Only this test's own calls to the sandbox's control API may appear.
    const networkCalls = fetchCalls.filter((url) => !url.includes('/sandbox/model/'));
    const requestsSeen = await w.model.requests();

    expect(result).toMatchObject({ status: 'unavailable', output: null, usage: null, reason: 'no model configured (AI_BASE_URL is none)', replayed: false });
    expect(result.run_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(elapsed).toBeLessThan(1000);
    expect(networkCalls).toEqual([]);
    expect(requestsSeen).toHaveLength(0);
    const rows = await w.world.sql(`SELECT status, reason, model FROM "${w.ai_schema}".ai_runs WHERE organization_id = 'org-nomodel'`);
    expect(rows).toEqual([{ status: 'unavailable', reason: 'no model configured (AI_BASE_URL is none)', model: 'sandbox-model' }]);
    expect(await w.world.sql(`SELECT * FROM "${w.ai_schema}".ai_budget_ledger`)).toEqual([]);
    expect(await w.ai.run(request)).toMatchObject({ status: 'unavailable', replayed: true, run_id: result.run_id });
  });

  it('lets the caller fall back when ai-gateway itself cannot be reached: AiClient answers unavailable, run_id null', async () => {
    await w.gateway.close();
    const result = await w.ai.run({
      organization_id: 'org-nomodel',
      kind: 'promise_resume',
      idempotency_key: 'promise:1',
      input: { promise: 'Send the new price list' },
      output_schema: AI_DEFAULT_OUTPUT_SCHEMAS.promise_resume,
      timeout_ms: 200,
    });

    expect(result).toEqual({ run_id: null, status: 'unavailable', output: null, usage: null, reason: 'ai_gateway_unreachable' });
  });
});
