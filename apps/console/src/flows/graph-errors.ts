/**
 * The `invalid_graph` answer of publish and rollback (seed 002: `error.details.validation_errors`,
 * each `{node_id, code, message, branch_id}`), sorted onto the nodes they name so the flow page
 * shows each problem on its node. An error naming no node, or a node the draft does not have, is
 * about the graph as a whole.
 */
export interface GraphError {
  node_id: string | null;
  code: string;
  message: string;
  branch_id?: string | null;
}

export interface GraphErrors {
  byNode: Map<string, GraphError[]>;
  graphWide: GraphError[];
}

/** The validation errors of an error's `details`, or [] when it carries none (another error code). */
export function validationErrorsOf(details: unknown): GraphError[] {
  const list = (details as { validation_errors?: unknown } | null | undefined)?.validation_errors;
  if (!Array.isArray(list)) return [];
  return list.flatMap((e: unknown) => {
    const item = e as Partial<GraphError> | null;
    if (!item || typeof item.code !== 'string') return [];
    return [{ node_id: typeof item.node_id === 'string' ? item.node_id : null, code: item.code, message: typeof item.message === 'string' ? item.message : item.code, branch_id: typeof item.branch_id === 'string' ? item.branch_id : null }];
  });
}

/** `errors` by the node they name, among `nodeIds`; the rest as graph-wide. */
export function errorsByNode(errors: GraphError[], nodeIds: readonly string[]): GraphErrors {
  const known = new Set(nodeIds);
  const byNode = new Map<string, GraphError[]>();
  const graphWide: GraphError[] = [];
  for (const error of errors) {
    if (error.node_id !== null && known.has(error.node_id)) byNode.set(error.node_id, [...(byNode.get(error.node_id) ?? []), error]);
    else graphWide.push(error);
  }
  return { byNode, graphWide };
}
