import { Injectable } from '@nestjs/common';
import type { FlowGraph, FlowSettings, FlowVersionView, FlowView } from '@touchpoint/contracts';
import { type Queryable, rowsOf } from '@touchpoint/database';

/** A row of `flows`; the columns its view shows as they are come from `FlowView`. */
interface FlowRow extends Pick<FlowView, 'id' | 'name' | 'graph' | 'settings' | 'status' | 'published_version_id' | 'revision' | 'model_id' | 'stage_id'> {
  organization_id: string;
  created_at: Date;
  updated_at: Date;
}

type VersionRow = {
  id: string;
  organization_id: string;
  flow_id: string;
  version: number;
  graph: FlowGraph;
  settings: FlowSettings;
  source_version_id: string | null;
  published_at: Date;
};

export const toFlowView = (r: FlowRow): FlowView => ({
  id: r.id,
  customer_id: r.organization_id,
  name: r.name,
  graph: r.graph,
  settings: r.settings,
  status: r.status,
  published_version_id: r.published_version_id,
  revision: r.revision,
  model_id: r.model_id,
  stage_id: r.stage_id,
  created_at: r.created_at.toISOString(),
  updated_at: r.updated_at.toISOString(),
});

export const toVersionView = (r: VersionRow): FlowVersionView => ({
  id: r.id,
  flow_id: r.flow_id,
  version: r.version,
  graph: r.graph,
  settings: r.settings,
  source_version_id: r.source_version_id,
  published_at: r.published_at.toISOString(),
});

/** Every SQL statement of flows and their versions. Every query is scoped by organization (DESIGN §5.5). */
@Injectable()
export class FlowsRepository {
  async list(db: Queryable, organizationId: string): Promise<FlowView[]> {
    const rows = await rowsOf<FlowRow>(db, `SELECT * FROM flows WHERE organization_id = $1 ORDER BY created_at DESC, id DESC`, [organizationId]);
    return rows.map(toFlowView);
  }

  /** Whether the organization has the flow (any status), without reading it. */
  async exists(db: Queryable, organizationId: string, flowId: string): Promise<boolean> {
    const rows = await rowsOf(db, `SELECT 1 FROM flows WHERE id = $1 AND organization_id = $2`, [flowId, organizationId]);
    return rows.length > 0;
  }

  async find(db: Queryable, organizationId: string, flowId: string, lock = false): Promise<FlowView | undefined> {
    const [row] = await rowsOf<FlowRow>(db, `SELECT * FROM flows WHERE id = $1 AND organization_id = $2 ${lock ? 'FOR UPDATE' : ''}`, [flowId, organizationId]);
    return row && toFlowView(row);
  }

  async insert(db: Queryable, flow: { id: string; organizationId: string; name: string; graph: FlowGraph; settings: FlowSettings; modelId?: string | null; stageId?: string | null; now: Date }): Promise<FlowView> {
    const [row] = await rowsOf<FlowRow>(
      db,
      `INSERT INTO flows (id, organization_id, name, graph, settings, status, model_id, stage_id, created_at, updated_at)
       VALUES ($1, $2, $3, $4::jsonb, $5::jsonb, 'draft', $6, $7, $8, $8) RETURNING *`,
      [flow.id, flow.organizationId, flow.name, JSON.stringify(flow.graph), JSON.stringify(flow.settings), flow.modelId ?? null, flow.stageId ?? null, flow.now],
    );
    return toFlowView(row);
  }

  /**
   * Compare-and-set on the flow's revision: applies `set` (column → value) and bumps the revision.
   * @returns the updated flow, or undefined when the revision moved on (or no such flow)
   */
  async updateIfRevision(db: Queryable, organizationId: string, flowId: string, expectedRevision: number, set: Record<string, unknown>, now: Date): Promise<FlowView | undefined> {
    const columns = Object.keys(set);
    const values = columns.map((c) => (c === 'graph' || c === 'settings' ? JSON.stringify(set[c]) : set[c]));
    const assignments = columns.map((c, i) => `${c} = $${i + 5}${c === 'graph' || c === 'settings' ? '::jsonb' : ''}`);
    const [row] = await rowsOf<FlowRow>(
      db,
      `UPDATE flows SET ${[...assignments, 'revision = revision + 1', 'updated_at = $4'].join(', ')}
        WHERE id = $1 AND organization_id = $2 AND revision = $3 RETURNING *`,
      [flowId, organizationId, expectedRevision, now, ...values],
    );
    return row && toFlowView(row);
  }

  async versions(db: Queryable, organizationId: string, flowId: string): Promise<FlowVersionView[]> {
    const rows = await rowsOf<VersionRow>(db, `SELECT * FROM flow_versions WHERE flow_id = $1 AND organization_id = $2 ORDER BY version DESC`, [flowId, organizationId]);
    return rows.map(toVersionView);
  }

  async findVersion(db: Queryable, organizationId: string, versionId: string): Promise<FlowVersionView | undefined> {
    const [row] = await rowsOf<VersionRow>(db, `SELECT * FROM flow_versions WHERE id = $1 AND organization_id = $2`, [versionId, organizationId]);
    return row && toVersionView(row);
  }

  /** Inserts the next version of a flow (numbered under the flow's row lock, which the caller holds). */
  async insertVersion(db: Queryable, v: { id: string; organizationId: string; flowId: string; graph: FlowGraph; settings: FlowSettings; sourceVersionId: string | null; now: Date }): Promise<FlowVersionView> {
    const [row] = await rowsOf<VersionRow>(
      db,
      `INSERT INTO flow_versions (id, organization_id, flow_id, version, graph, settings, source_version_id, published_at)
       VALUES ($1, $2, $3, (SELECT coalesce(max(version), 0) + 1 FROM flow_versions WHERE flow_id = $3), $4::jsonb, $5::jsonb, $6, $7)
       RETURNING *`,
      [v.id, v.organizationId, v.flowId, JSON.stringify(v.graph), JSON.stringify(v.settings), v.sourceVersionId, v.now],
    );
    return toVersionView(row);
  }
}
