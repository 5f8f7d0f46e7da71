import { evaluateCondition, evaluateRule, failureBackoffMs, matchReply, renderTemplate, type StepFacts } from '../step-rules.js';

const facts = (over: Partial<{ tags: string[]; name: string | null; fields: Record<string, unknown>; variables: Record<string, unknown>; anchor: Date | null; last: string | null }> = {}): StepFacts => ({
  contact: { name: over.name === undefined ? 'Ana Souza' : over.name, phone: '+5592988887777', email: null, tags: over.tags ?? ['vip', 'Cliente'], fields: over.fields ?? { plano: 'Pró', visitas: 3 } },
  enrollment: { variables: over.variables ?? { produto: 'cadeira' }, anchor_at: over.anchor === undefined ? new Date('2026-10-02T13:00:00Z') : over.anchor, last_send_status: over.last ?? 'sent' },
  timezone: 'America/Sao_Paulo',
});

describe('evaluateRule', () => {
  it.each([
    [{ field: 'contact.tags', op: 'contains', value: 'vip' }, true],
    [{ field: 'contact.tags', op: 'contains', value: 'cliente' }, true],
    [{ field: 'contact.tags', op: 'not_contains', value: 'vip' }, false],
    [{ field: 'contact.tags', op: 'in', value: ['x', 'VIP'] }, true],
    [{ field: 'contact.name', op: 'contains', value: 'souza' }, true],
    [{ field: 'contact.email', op: 'exists' }, false],
    [{ field: 'contact.email', op: 'not_exists' }, true],
    [{ field: 'contact.fields.plano', op: 'eq', value: 'pro' }, true],
    [{ field: 'contact.fields.plano', op: 'neq', value: 'pro' }, false],
    [{ field: 'contact.fields.visitas', op: 'gte', value: 3 }, true],
    [{ field: 'contact.fields.visitas', op: 'gt', value: 3 }, false],
    [{ field: 'contact.fields.visitas', op: 'lt', value: 10 }, true],
    [{ field: 'contact.fields.missing', op: 'lte', value: 10 }, false],
    [{ field: 'vars.produto', op: 'eq', value: 'Cadeira' }, true],
    [{ field: 'vars.cor', op: 'eq', value: 'azul' }, false],
    [{ field: 'last_send.status', op: 'eq', value: 'sent' }, true],
    [{ field: 'last_send.status', op: 'in', value: ['failed', 'cancelled'] }, false],
  ] as const)('%j → %s', (rule, expected) => {
    expect(evaluateRule(rule as never, facts())).toBe(expected);
  });
});

describe('evaluateCondition', () => {
  const rules = [
    { field: 'contact.tags', op: 'contains', value: 'vip' },
    { field: 'vars.cor', op: 'exists' },
  ] as never[];
  it('needs every rule with match all, one with match any', () => {
    expect(evaluateCondition({ match: 'all', rules }, facts())).toBe(false);
    expect(evaluateCondition({ match: 'any', rules }, facts())).toBe(true);
  });
});

describe('matchReply', () => {
  const config = {
    branches: [
      { id: 'yes', keywords: ['sim', 'confirmo'] },
      { id: 'no', keywords: ['não posso', 'cancelar'] },
    ],
  };
  it.each([
    ['Sim!', 'yes'],
    ['SIM, pode ser', 'yes'],
    ['confirmo.', 'yes'],
    ['Nao posso amanha', 'no'],
    ['quero CANCELAR', 'no'],
    ['assim não dá', 'default'],
    ['simples', 'default'],
    ['', 'default'],
  ])('%j → %s', (reply, branch) => {
    expect(matchReply(config, reply)).toBe(branch);
  });
  it('takes the default branch without a reply', () => {
    expect(matchReply(config, null)).toBe('default');
  });
});

describe('renderTemplate', () => {
  it.each([
    ['Oi {{contact.first_name}}, sobre a {{vars.produto}}', { text: 'Oi Ana, sobre a cadeira' }],
    ['Seu horário: {{anchor.date}} às {{anchor.time}}', { text: 'Seu horário: 02/10/2026 às 10:00' }],
    ['{{ anchor.at }}', { text: '02/10/2026 10:00' }],
    ['Sem variáveis', { text: 'Sem variáveis' }],
    ['Cor {{vars.cor}}', { missing: 'vars.cor' }],
  ])('%j', (text, expected) => {
    expect(renderTemplate(text, facts())).toEqual(expected);
  });
  it('reports a missing anchor and a missing name', () => {
    expect(renderTemplate('{{anchor.date}}', facts({ anchor: null }))).toEqual({ missing: 'anchor.date' });
    expect(renderTemplate('Oi {{contact.name}}', facts({ name: null }))).toEqual({ missing: 'contact.name' });
  });
});

describe('failureBackoffMs', () => {
  it.each([
    [1, 30_000],
    [2, 60_000],
    [3, 120_000],
    [7, 1_920_000],
    [8, 3_600_000],
    [20, 3_600_000],
  ])('after failure %i waits %i ms (30 s … 1 h)', (failures, ms) => {
    expect(failureBackoffMs(failures)).toBe(ms);
  });
});
