import { Injectable } from '@nestjs/common';
import type { FlowSettings } from '@touchpoint/contracts';
import { type CompiledGraph, compileGraph } from '../graph/graph-validation.js';
import { type Queryable, rowsOf } from '@touchpoint/database';

/** A published version, compiled for the engine. */
export interface CompiledVersion {
  id: string;
  flowId: string;
  graph: CompiledGraph;
  settings: FlowSettings;
}

/** Versions kept compiled in memory; versions never change, so an entry never goes stale. */
const CACHE_SIZE = 2000;

/** Compiled flow versions for the release loop (versions are immutable: cache without invalidation). */
@Injectable()
export class FlowVersionCache {
  private readonly cache = new Map<string, CompiledVersion>();

  /** @throws Error when the version does not exist */
  async get(db: Queryable, versionId: string): Promise<CompiledVersion> {
    const hit = this.cache.get(versionId);
    if (hit) return hit;
    const [row] = await rowsOf<{ id: string; flow_id: string; graph: never; settings: FlowSettings }>(db, `SELECT id, flow_id, graph, settings FROM flow_versions WHERE id = $1`, [versionId]);
    if (!row) throw new Error(`flow version ${versionId} not found`);
    const compiled = { id: row.id, flowId: row.flow_id, graph: compileGraph(row.graph), settings: row.settings };
    if (this.cache.size >= CACHE_SIZE) this.cache.delete(this.cache.keys().next().value as string);
    this.cache.set(versionId, compiled);
    return compiled;
  }
}
