import { FLOW_VALIDATION_CODES, type FlowEdge, type FlowGraph, type FlowNode, type FlowSettings, type FlowValidationCode } from '@touchpoint/contracts';
import { compileGraph, type PublishContext, sendsOutsideServiceWindow, validateForPublish } from '../graph-validation.js';
import { SEED_002_FLOW_EXAMPLE } from '@touchpoint/contracts';

const HOUR = 3_600_000;
const settings: FlowSettings = { trigger: { kind: 'manual', cancel_on_reply: true }, handoff_policy: 'pause' };
const context: PublishContext = {
  approvedTemplates: [
    { name: 'retomada', language: 'pt_BR', parameter_count: 1 },
    { name: 'lembrete', language: 'pt_BR', parameter_count: 0 },
  ],
  aiStepsAvailable: false,
};

const node = (id: string, type: string, config: Record<string, unknown> = {}): FlowNode => ({ id, type, config });
const edge = (source: string, target: string, condition: FlowEdge['condition'] = { type: 'always' }, id = `${source}->${target}:${JSON.stringify(condition)}`): FlowEdge => ({
  id,
  source,
  target,
  condition,
});
const wait = (id: string, ms = HOUR) => node(id, 'wait', { mode: 'fixed', duration_ms: ms });
const text = (id: string, body = 'Oi', extra: Record<string, unknown> = {}) => node(id, 'action', { mode: 'text', body, ...extra });

/** trigger → wait 1 h → text → end: valid. */
function linear(): FlowGraph {
  return {
    nodes: [node('t', 'trigger'), wait('w'), text('a'), node('e', 'end', { outcome: 'exhausted' })],
    edges: [edge('t', 'w'), edge('w', 'a'), edge('a', 'e')],
  };
}

const codesOf = (graph: FlowGraph, s: FlowSettings = settings, c: PublishContext = context) => validateForPublish(graph, s, c).map((e) => e.code);

describe('validateForPublish', () => {
  it('publishes the seed 002 example cleanly', () => {
    expect(validateForPublish(SEED_002_FLOW_EXAMPLE.graph, SEED_002_FLOW_EXAMPLE.settings, context)).toEqual([]);
  });

  it('accepts a linear flow', () => {
    expect(codesOf(linear())).toEqual([]);
  });

  it('accepts a graph using every non-AI node type, with every exit covered', () => {
    const graph: FlowGraph = {
      nodes: [
        node('t', 'trigger'),
        node('ask', 'action', { mode: 'text', body: 'Podemos falar?' }),
        node('wr', 'wait', { mode: 'reply', timeout_ms: 2 * HOUR }),
        node('m', 'match_reply', { branches: [{ id: 'yes', keywords: ['sim', 'pode'] }] }),
        node('c', 'condition', { match: 'all', rules: [{ field: 'contact.tags', op: 'contains', value: 'vip' }] }),
        node('tag', 'action', { mode: 'tag', tags: ['interessado'] }),
        node('r', 'repeat', { max_count: 2 }),
        wait('w', HOUR),
        node('tpl', 'action', { mode: 'template', template: { name: 'retomada', language: 'pt_BR', parameters: ['{{contact.first_name}}'] } }),
        node('h', 'action', { mode: 'handoff', note: 'quer falar' }),
        node('e1', 'end', { outcome: 'converted' }),
        node('e2', 'end'),
      ],
      edges: [
        edge('t', 'ask'),
        edge('ask', 'wr'),
        edge('wr', 'm', { type: 'branch', branch_id: 'replied' }),
        edge('wr', 'r', { type: 'branch', branch_id: 'timeout' }),
        edge('m', 'c', { type: 'branch', branch_id: 'yes' }),
        edge('m', 'h', { type: 'branch', branch_id: 'default' }),
        edge('c', 'tag', { type: 'cond_result', value: true }),
        edge('c', 'e1', { type: 'cond_result', value: false }),
        edge('tag', 'e1'),
        edge('r', 'w', { type: 'branch', branch_id: 'again' }),
        edge('r', 'tpl', { type: 'branch', branch_id: 'done' }),
        edge('w', 'wr'),
        edge('tpl', 'e2'),
        edge('h', 'e2'),
      ],
    };
    expect(validateForPublish(graph, settings, context)).toEqual([]);
  });

  /** One row per validation code: a graph that breaks exactly that rule, and the node it names. */
  const cases: { code: FlowValidationCode; graph: () => FlowGraph; settings?: FlowSettings; node: string | null; branch?: string | null }[] = [
    {
      code: 'unknown_node_type',
      graph: () => ({ ...linear(), nodes: [...linear().nodes.slice(0, 2), node('a', 'send_sms', { body: 'x' }), linear().nodes[3]] }),
      node: 'a',
    },
    { code: 'invalid_config', graph: () => ({ ...linear(), nodes: [...linear().nodes.slice(0, 2), node('a', 'action', { mode: 'text', body: '' }), linear().nodes[3]] }), node: 'a' },
    { code: 'duplicate_node_id', graph: () => ({ ...linear(), nodes: [...linear().nodes, node('a', 'end')] }), node: 'a' },
    { code: 'duplicate_edge_id', graph: () => ({ ...linear(), edges: [edge('t', 'w', { type: 'always' }, 'x'), edge('w', 'a', { type: 'always' }, 'x'), edge('a', 'e')] }), node: 'w' },
    { code: 'dangling_edge', graph: () => ({ ...linear(), edges: [...linear().edges, edge('a', 'ghost', { type: 'branch', branch_id: 'x' })] }), node: 'a' },
    { code: 'invalid_edge_condition', graph: () => ({ ...linear(), edges: [edge('t', 'w'), edge('w', 'a', { type: 'cond_result', value: true }), edge('a', 'e')] }), node: 'w', branch: 'true' },
    { code: 'node_count', graph: () => ({ nodes: [node('t', 'trigger')], edges: [] }), node: null },
    {
      code: 'edge_count',
      graph: () => ({ ...linear(), edges: [...linear().edges, ...Array.from({ length: 120 }, (_, i) => edge('t', 'w', { type: 'always' }, `extra${i}`))] }),
      node: null,
    },
    { code: 'trigger_count', graph: () => ({ nodes: [wait('w'), text('a'), node('e', 'end')], edges: [edge('w', 'a'), edge('a', 'e')] }), node: null },
    { code: 'trigger_has_inbound', graph: () => ({ ...linear(), nodes: [...linear().nodes, wait('w2')], edges: [...linear().edges, edge('w2', 't')] }), node: 't' },
    { code: 'end_has_exit', graph: () => ({ ...linear(), edges: [...linear().edges, edge('e', 'a')] }), node: 'e' },
    { code: 'unreachable_node', graph: () => ({ ...linear(), nodes: [...linear().nodes, text('orphan')], edges: [...linear().edges, edge('orphan', 'e')] }), node: 'orphan' },
    {
      code: 'no_path_to_end',
      graph: () => ({
        nodes: [node('t', 'trigger'), wait('w'), text('a'), node('e', 'end')],
        edges: [edge('t', 'w'), edge('w', 'a'), edge('a', 'w')],
      }),
      node: 'a',
    },
    {
      code: 'uncovered_exit',
      graph: () => ({
        nodes: [node('t', 'trigger'), node('c', 'condition', { rules: [{ field: 'vars.plan', op: 'eq', value: 'pro' }] }), node('e', 'end')],
        edges: [edge('t', 'c'), edge('c', 'e', { type: 'cond_result', value: true })],
      }),
      node: 'c',
      branch: 'false',
    },
    {
      code: 'duplicate_exit',
      graph: () => ({ ...linear(), nodes: [...linear().nodes, node('e2', 'end')], edges: [...linear().edges, edge('a', 'e2')] }),
      node: 'a',
      branch: null,
    },
    {
      code: 'cycle_without_wait',
      graph: () => ({
        nodes: [node('t', 'trigger'), node('r', 'repeat', { max_count: 3 }), text('a'), node('e', 'end')],
        edges: [edge('t', 'r'), edge('r', 'a', { type: 'branch', branch_id: 'again' }), edge('a', 'r'), edge('r', 'e', { type: 'branch', branch_id: 'done' })],
      }),
      node: 'r',
    },
    { code: 'wait_out_of_range', graph: () => ({ ...linear(), nodes: [linear().nodes[0], wait('w', 60_000), ...linear().nodes.slice(2)] }), node: 'w' },
    { code: 'needs_template_fallback', graph: () => ({ ...linear(), nodes: [linear().nodes[0], wait('w', 24 * HOUR), ...linear().nodes.slice(2)] }), node: 'a' },
    {
      code: 'unknown_template',
      graph: () => ({ ...linear(), nodes: [...linear().nodes.slice(0, 2), node('a', 'action', { mode: 'template', template: { name: 'nope', language: 'pt_BR' } }), linear().nodes[3]] }),
      node: 'a',
    },
    {
      code: 'ai_step_unavailable',
      graph: () => ({ ...linear(), nodes: [...linear().nodes.slice(0, 2), node('a', 'action', { mode: 'ai', instructions: 'Retome a conversa' }), linear().nodes[3]] }),
      node: 'a',
    },
    { code: 'invalid_settings', graph: linear, settings: { ...settings, send_start_hour: 9, send_end_hour: 20, send_days: [1], timezone: 'Mars/Olympus' }, node: null },
  ];

  it('has a case for every code', () => {
    expect(cases.map((c) => c.code).sort()).toEqual([...FLOW_VALIDATION_CODES].sort());
  });

  it.each(cases)('reports $code', ({ code, graph, settings: s, node: nodeId, branch }) => {
    const errors = validateForPublish(graph(), s ?? settings, context);
    const hits = errors.filter((e) => e.code === code);
    expect(hits).toContainEqual(expect.objectContaining({ code, node_id: nodeId, ...(branch !== undefined ? { branch_id: branch } : {}) }));
    for (const hit of hits) expect(hit.message.length).toBeGreaterThan(0);
  });

  it('gives every error the four documented fields', () => {
    const errors = validateForPublish({ nodes: [node('x', 'bogus')], edges: [] }, settings, context);
    expect(errors.length).toBeGreaterThan(0);
    for (const e of errors) expect(Object.keys(e).sort()).toEqual(['branch_id', 'code', 'message', 'node_id']);
  });

  it('accepts AI steps once their engine is available', () => {
    const graph: FlowGraph = { ...linear(), nodes: [...linear().nodes.slice(0, 2), node('a', 'action', { mode: 'ai', instructions: 'x' }), linear().nodes[3]] };
    expect(codesOf(graph, settings, { ...context, aiStepsAvailable: true })).toEqual([]);
  });

  it.each([
    ['a wait of exactly 5 minutes', 5 * 60_000, []],
    ['a wait of exactly 90 days', 90 * 24 * HOUR, ['needs_template_fallback']],
    ['a wait just under 5 minutes', 5 * 60_000 - 1, ['wait_out_of_range']],
    ['a wait just over 90 days', 90 * 24 * HOUR + 1, ['wait_out_of_range']],
  ])('bounds waits: %s', (_label, ms, expected) => {
    expect(codesOf({ ...linear(), nodes: [linear().nodes[0], wait('w', ms), ...linear().nodes.slice(2)] })).toEqual(expected);
  });

  it('reports a template with the wrong number of parameters as invalid_config', () => {
    const graph: FlowGraph = { ...linear(), nodes: [...linear().nodes.slice(0, 2), node('a', 'action', { mode: 'template', template: { name: 'retomada', language: 'pt_BR' } }), linear().nodes[3]] };
    expect(codesOf(graph)).toEqual(['invalid_config']);
  });
});

describe('sendsOutsideServiceWindow', () => {
  const flow = (waitMs: number, extra: Record<string, unknown> = {}): FlowGraph => ({
    nodes: [node('t', 'trigger'), wait('w', waitMs), text('a', 'Oi', extra), node('e', 'end')],
    edges: [edge('t', 'w'), edge('w', 'a'), edge('a', 'e')],
  });

  it.each([
    ['23 h after the last message', 23 * HOUR, true, []],
    ['24 h after the last message', 24 * HOUR, true, ['a']],
    ['any time, when the trigger is not a conversation', 5 * 60_000, false, ['a']],
  ])('flags a free-text send %s', (_label, ms, inConversation, expected) => {
    expect(sendsOutsideServiceWindow(compileGraph(flow(ms)), inConversation)).toEqual(expected);
  });

  it('accepts a late free-text send that has a template fallback', () => {
    expect(sendsOutsideServiceWindow(compileGraph(flow(48 * HOUR, { template_fallback: { name: 'lembrete', language: 'pt_BR' } })), true)).toEqual([]);
  });

  it('counts repeat loops up to max_count', () => {
    // trigger → repeat(again → wait 6 h → send → repeat | done → end): sends at 6, 12, 18 h with 3, at 24 h with 4.
    const loop = (max: number): FlowGraph => ({
      nodes: [node('t', 'trigger'), node('r', 'repeat', { max_count: max }), wait('w', 6 * HOUR), text('a'), node('e', 'end')],
      edges: [edge('t', 'r'), edge('r', 'w', { type: 'branch', branch_id: 'again' }), edge('w', 'a'), edge('a', 'r'), edge('r', 'e', { type: 'branch', branch_id: 'done' })],
    });
    expect(sendsOutsideServiceWindow(compileGraph(loop(3)), true)).toEqual([]);
    expect(sendsOutsideServiceWindow(compileGraph(loop(4)), true)).toEqual(['a']);
  });

  it('resets the clock when the contact replies', () => {
    const graph: FlowGraph = {
      nodes: [node('t', 'trigger'), node('wr', 'wait', { mode: 'reply', timeout_ms: 48 * HOUR }), wait('w', 2 * HOUR), text('a'), node('e', 'end')],
      edges: [edge('t', 'wr'), edge('wr', 'w', { type: 'branch', branch_id: 'replied' }), edge('wr', 'e', { type: 'branch', branch_id: 'timeout' }), edge('w', 'a'), edge('a', 'e')],
    };
    expect(sendsOutsideServiceWindow(compileGraph(graph), true)).toEqual([]);
  });
});
