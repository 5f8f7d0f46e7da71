import { FLOW_EDGE_CONDITION_TYPES, FLOW_MAX_EDGES, FLOW_MAX_NODES, FLOW_MIN_NODES, FLOW_NODE_TYPES, type FlowEdge, type FlowGraph, type FlowSettings, type FlowTemplateRef, type FlowValidationCode, type FlowValidationError } from '@touchpoint/contracts';
import { WHATSAPP_SERVICE_WINDOW_MS } from '@touchpoint/time';
import { CONVERSATION_TRIGGERS, flowSettingsProblems } from '../flows/flow-settings.js';
import { branchIdOf, type ExitKey, exitKeyOf, exitsOf, isSendAction, type ParsedNode, parseNodeConfig, usesAi } from './node-config.js';

/**
 * Publish validation (seed 002 "POST /ai/followup-flows/{id}/publish"): reach, paths to an end,
 * covered exits, cycles without a wait, waits, templates and the 24-hour window. Pure: everything
 * it needs from the organization comes in `context`.
 */

export interface PublishContext {
  /** Templates the organization may send (`unknown_template` otherwise). */
  approvedTemplates: readonly { name: string; language: string; parameter_count: number }[];
  /** Whether AI steps may be published here (FOLLOWUP_AI_STEPS_ENABLED); when not, they fail with `ai_step_unavailable`. */
  aiStepsAvailable: boolean;
}

/** The graph with every node parsed, as the engine reads it. */
export interface CompiledGraph {
  nodes: Map<string, ParsedNode & { id: string }>;
  /** node id → exit key → target node id. */
  next: Map<string, Map<ExitKey, string>>;
  triggerId: string;
}

const err = (code: FlowValidationCode, message: string, node_id: string | null = null, branch_id: string | null = null): FlowValidationError => ({ node_id, code, message, branch_id });

/**
 * Every reason the graph cannot be published, in a stable order (empty when it can).
 * `validation_errors` of a 422 `invalid_graph`.
 */
export function validateForPublish(graph: FlowGraph, settings: FlowSettings, context: PublishContext): FlowValidationError[] {
  const errors: FlowValidationError[] = [];
  const nodes = Array.isArray(graph?.nodes) ? graph.nodes : [];
  const edges = Array.isArray(graph?.edges) ? graph.edges : [];

  for (const problem of flowSettingsProblems(settings)) errors.push(err('invalid_settings', problem));

  if (nodes.length < FLOW_MIN_NODES || nodes.length > FLOW_MAX_NODES) {
    errors.push(err('node_count', `a flow has ${FLOW_MIN_NODES} to ${FLOW_MAX_NODES} nodes; this one has ${nodes.length}`));
  }
  if (edges.length > FLOW_MAX_EDGES) errors.push(err('edge_count', `a flow has at most ${FLOW_MAX_EDGES} edges; this one has ${edges.length}`));

  // Nodes: ids, types, configs.
  const parsed = new Map<string, ParsedNode & { id: string }>();
  const seenNodeIds = new Set<string>();
  // Nodes of a known type, parsed or not: a node whose config is bad still takes part in the
  // graph's shape, so one bad config does not cascade into reach and path errors.
  const knownIds = new Set<string>();
  const typeOf = new Map(nodes.map((n) => [n.id, n.type]));
  for (const node of nodes) {
    if (seenNodeIds.has(node.id)) {
      errors.push(err('duplicate_node_id', `node id "${node.id}" is used more than once`, node.id));
      continue;
    }
    seenNodeIds.add(node.id);
    if (!FLOW_NODE_TYPES.includes(node.type as never)) {
      errors.push(err('unknown_node_type', `unknown node type "${node.type}"; expected one of ${FLOW_NODE_TYPES.join(', ')}`, node.id));
      continue;
    }
    knownIds.add(node.id);
    const result = parseNodeConfig(node);
    if (!result.ok) {
      for (const p of result.problems) errors.push(err(p.code, p.message, node.id));
      continue;
    }
    parsed.set(node.id, { ...result.node, id: node.id });
  }
  for (const node of parsed.values()) {
    if (usesAi(node) && !context.aiStepsAvailable) {
      errors.push(err('ai_step_unavailable', 'AI steps (ai_classify, AI-written actions) cannot be published yet: their engine is not enabled on this installation', node.id));
    }
  }
  const triggers = nodes.filter((n) => n.type === 'trigger');
  if (triggers.length !== 1) errors.push(err('trigger_count', `a flow has exactly one trigger node; this one has ${triggers.length}`, triggers[1]?.id ?? null));

  // Edges: ids, ends, conditions, exits.
  const seenEdgeIds = new Set<string>();
  const next = new Map<string, Map<ExitKey, string>>();
  const inbound = new Map<string, string[]>();
  const outbound = new Map<string, string[]>();
  const link = (source: string, target: string) => {
    outbound.set(source, [...(outbound.get(source) ?? []), target]);
    inbound.set(target, [...(inbound.get(target) ?? []), source]);
  };
  for (const edge of edges) {
    if (seenEdgeIds.has(edge.id)) errors.push(err('duplicate_edge_id', `edge id "${edge.id}" is used more than once`, edge.source ?? null));
    seenEdgeIds.add(edge.id);
    if (!seenNodeIds.has(edge.source) || !seenNodeIds.has(edge.target)) {
      const missing = !seenNodeIds.has(edge.source) ? edge.source : edge.target;
      errors.push(err('dangling_edge', `edge "${edge.id}" points to node "${missing}", which does not exist`, seenNodeIds.has(edge.source) ? edge.source : null));
      continue;
    }
    const conditionProblem = edgeConditionProblem(edge);
    if (conditionProblem) {
      errors.push(err('invalid_edge_condition', `edge "${edge.id}": ${conditionProblem}`, edge.source));
      continue;
    }
    const source = parsed.get(edge.source);
    const targetNode = nodes.find((n) => n.id === edge.target);
    if (targetNode?.type === 'trigger') errors.push(err('trigger_has_inbound', `edge "${edge.id}" enters the trigger; nothing may lead back to it`, edge.target));
    if (!source) {
      // Its node already has an error; keep the edge for the graph's shape.
      if (knownIds.has(edge.source) && typeOf.get(edge.source) !== 'end') link(edge.source, edge.target);
      continue;
    }
    if (source.type === 'end') {
      errors.push(err('end_has_exit', `edge "${edge.id}" leaves an end node; an end has no exits`, source.id));
      continue;
    }
    const exit = exitKeyOf(edge.condition);
    if (!exitsOf(source).includes(exit)) {
      errors.push(err('invalid_edge_condition', `edge "${edge.id}" covers exit "${exit}", which a ${source.type} node of this config does not have (exits: ${exitsOf(source).join(', ')})`, source.id, branchIdOf(exit)));
      continue;
    }
    const exits = next.get(source.id) ?? new Map<ExitKey, string>();
    if (exits.has(exit)) {
      errors.push(err('duplicate_exit', `exit "${exit}" of node "${source.id}" is covered by more than one edge`, source.id, branchIdOf(exit)));
      continue;
    }
    exits.set(exit, edge.target);
    next.set(source.id, exits);
    link(source.id, edge.target);
  }
  for (const node of parsed.values()) {
    for (const exit of exitsOf(node)) {
      if (!next.get(node.id)?.has(exit)) errors.push(err('uncovered_exit', `exit "${exit}" of node "${node.id}" has no edge`, node.id, branchIdOf(exit)));
    }
  }

  // Shape of the whole graph (over the edges that are valid).
  const trigger = triggers.length === 1 ? triggers[0].id : undefined;
  const successors = (id: string): string[] => outbound.get(id) ?? [];
  if (trigger) {
    const reached = reach([trigger], successors);
    for (const node of nodes) if (!reached.has(node.id) && seenNodeIds.has(node.id)) errors.push(err('unreachable_node', `node "${node.id}" cannot be reached from the trigger`, node.id));
  }
  const ends = [...knownIds].filter((id) => typeOf.get(id) === 'end');
  const canFinish = reach(ends, (id) => inbound.get(id) ?? []);
  for (const id of knownIds) {
    if (!canFinish.has(id)) errors.push(err('no_path_to_end', `no path leads from node "${id}" to an end node`, id));
  }
  for (const id of cyclesWithoutWait([...knownIds], (id) => typeOf.get(id) === 'wait', successors)) {
    errors.push(err('cycle_without_wait', `node "${id}" is on a cycle with no wait node: the flow could loop without pause`, id));
  }

  // Templates.
  for (const node of parsed.values()) {
    if (node.type !== 'action') continue;
    const refs: FlowTemplateRef[] = [];
    if (node.config.mode === 'template') refs.push(node.config.template);
    if ((node.config.mode === 'text' || node.config.mode === 'media' || node.config.mode === 'ai') && node.config.template_fallback) refs.push(node.config.template_fallback);
    for (const ref of refs) {
      const known = context.approvedTemplates.find((t) => t.name === ref.name && t.language === ref.language);
      if (!known) errors.push(err('unknown_template', `template "${ref.name}" (${ref.language}) is not among the organization's approved templates`, node.id));
      else if ((ref.parameters?.length ?? 0) !== known.parameter_count) {
        errors.push(err('invalid_config', `template "${ref.name}" takes ${known.parameter_count} parameter(s); ${ref.parameters?.length ?? 0} given`, node.id));
      }
    }
  }

  // The 24-hour window: only when the graph is sound enough to walk.
  if (trigger && parsed.has(trigger)) {
    const startsInConversation = CONVERSATION_TRIGGERS.includes(settings?.trigger?.kind as string);
    for (const id of sendsOutsideServiceWindow({ nodes: parsed, next, triggerId: trigger }, startsInConversation)) {
      errors.push(err('needs_template_fallback', `node "${id}" sends free-form content that can go out more than 24 hours after the contact's last message; add a template_fallback (or send a template)`, id));
    }
  }
  return errors;
}

/** Problems of an edge condition's own shape (before matching it to its source's exits). */
function edgeConditionProblem(edge: FlowEdge): string | undefined {
  const c = edge.condition as unknown as Record<string, unknown> | undefined;
  if (!c || typeof c !== 'object' || !FLOW_EDGE_CONDITION_TYPES.includes(c.type as never)) return `condition.type must be one of ${FLOW_EDGE_CONDITION_TYPES.join(', ')}`;
  if (c.type === 'branch' && (typeof c.branch_id !== 'string' || !c.branch_id)) return 'a branch condition needs branch_id';
  if (c.type === 'class_match' && (typeof c.class_id !== 'string' || !c.class_id)) return 'a class_match condition needs class_id';
  if (c.type === 'cond_result' && typeof c.value !== 'boolean') return 'a cond_result condition needs value true or false';
  return undefined;
}

/** Nodes reachable from `starts` following `step`. */
function reach(starts: string[], step: (id: string) => string[]): Set<string> {
  const seen = new Set<string>(starts);
  const stack = [...starts];
  while (stack.length)
    for (const n of step(stack.pop()!))
      if (!seen.has(n)) {
        seen.add(n);
        stack.push(n);
      }
  return seen;
}

/**
 * Nodes on a cycle that passes no wait node: the graph with its waits removed must be acyclic.
 * Reports one node per such cycle (the first found on it).
 */
function cyclesWithoutWait(ids: string[], isWait: (id: string) => boolean, successors: (id: string) => string[]): string[] {
  const state = new Map<string, 'open' | 'done'>();
  const found: string[] = [];
  const visit = (id: string): void => {
    state.set(id, 'open');
    for (const target of successors(id)) {
      if (isWait(target)) continue;
      const s = state.get(target);
      if (s === 'open') {
        if (!found.includes(target)) found.push(target);
      } else if (!s) visit(target);
    }
    state.set(id, 'done');
  };
  for (const id of ids) if (!isWait(id) && !state.has(id)) visit(id);
  return found;
}

/** Bound on states explored by the window walk; past it, unexplored sends are assumed late. */
const WALK_STATE_LIMIT = 200_000;

/**
 * Send nodes with free-form content (text, media, AI) and no template fallback that can run 24 h
 * or more after the contact last wrote. Time since the contact's message grows along waits (a
 * reply wait's `replied` exit resets it: the contact just wrote) and `repeat` loops at most
 * `max_count` times. The send window's deferrals are not counted: the engine checks the real
 * window before every send and skips (or falls back to a template) when it has closed.
 */
export function sendsOutsideServiceWindow(graph: CompiledGraph, startsInConversation: boolean): string[] {
  const late = new Set<string>();
  // Best (largest) elapsed seen per state; elapsed is capped at the window, which is all that matters.
  const best = new Map<string, number>();
  let explored = 0;
  let exhausted = false;
  const stack: { id: string; elapsed: number; counts: Record<string, number> }[] = [{ id: graph.triggerId, elapsed: startsInConversation ? 0 : WHATSAPP_SERVICE_WINDOW_MS, counts: {} }];
  while (stack.length) {
    const { id, elapsed, counts } = stack.pop()!;
    const node = graph.nodes.get(id);
    if (!node) continue;
    const key = `${id}|${JSON.stringify(counts)}`;
    if ((best.get(key) ?? -1) >= elapsed) continue;
    best.set(key, elapsed);
    if (++explored > WALK_STATE_LIMIT) {
      exhausted = true;
      break;
    }
    if (node.type === 'action' && isSendAction(node.config) && node.config.mode !== 'template' && !node.config.template_fallback && elapsed >= WHATSAPP_SERVICE_WINDOW_MS) late.add(id);
    const exits = graph.next.get(id);
    if (!exits) continue;
    const push = (exit: ExitKey, nextElapsed: number, nextCounts = counts) => {
      const target = exits.get(exit);
      if (target) stack.push({ id: target, elapsed: Math.min(WHATSAPP_SERVICE_WINDOW_MS, nextElapsed), counts: nextCounts });
    };
    if (node.type === 'wait') {
      if (node.config.mode === 'fixed') push('always', elapsed + node.config.duration_ms);
      else {
        push('branch:replied', 0);
        push('branch:timeout', elapsed + node.config.timeout_ms);
      }
    } else if (node.type === 'repeat') {
      const count = counts[id] ?? 0;
      if (count < node.config.max_count) push('branch:again', elapsed, { ...counts, [id]: count + 1 });
      else push('branch:done', elapsed, { ...counts, [id]: 0 });
    } else {
      for (const exit of exits.keys()) push(exit, elapsed);
    }
  }
  if (exhausted) {
    for (const node of graph.nodes.values()) {
      if (node.type === 'action' && isSendAction(node.config) && node.config.mode !== 'template' && !node.config.template_fallback) late.add(node.id);
    }
  }
  return [...late];
}

/**
 * Compiles a graph that passed `validateForPublish` for the engine.
 * @throws Error when a node does not parse (a version is only ever stored after validation)
 */
export function compileGraph(graph: FlowGraph): CompiledGraph {
  const nodes = new Map<string, ParsedNode & { id: string }>();
  let triggerId = '';
  for (const node of graph.nodes) {
    const result = parseNodeConfig(node);
    if (!result.ok) throw new Error(`node ${node.id} does not parse: ${result.problems.map((p) => p.message).join('; ')}`);
    nodes.set(node.id, { ...result.node, id: node.id });
    if (node.type === 'trigger') triggerId = node.id;
  }
  const next = new Map<string, Map<ExitKey, string>>();
  for (const edge of graph.edges) {
    const exits = next.get(edge.source) ?? new Map<ExitKey, string>();
    exits.set(exitKeyOf(edge.condition), edge.target);
    next.set(edge.source, exits);
  }
  return { nodes, next, triggerId };
}
