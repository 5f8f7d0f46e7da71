import { Injectable } from '@nestjs/common';
import { type Queryable, rowsOf } from '@touchpoint/database';

/** How long an organization's rule kinds are trusted without asking again, ms (seed 000 "Rules": 30 s TTL). */
export const RULE_CACHE_TTL_MS = 30_000;

/**
 * Per-process cache of which trigger kinds an organization has enabled rules for (active flows
 * whose published version starts on that kind), so recording a trigger costs an event nothing
 * when no rule listens (seed 000 "Rules"). Invalidated by flow publication and status events.
 */
@Injectable()
export class RuleCache {
  private readonly kinds = new Map<string, { kinds: Set<string>; expires: number }>();

  async has(db: Queryable, organizationId: string, kind: string): Promise<boolean> {
    const hit = this.kinds.get(organizationId);
    if (hit && hit.expires > Date.now()) return hit.kinds.has(kind);
    const rows = await rowsOf<{ kind: string }>(
      db,
      `SELECT DISTINCT v.settings -> 'trigger' ->> 'kind' AS kind
         FROM flows f JOIN flow_versions v ON v.id = f.published_version_id
        WHERE f.organization_id = $1 AND f.status = 'active'`,
      [organizationId],
    );
    const kinds = new Set(rows.map((r) => r.kind).filter((k) => k !== 'manual'));
    this.kinds.set(organizationId, { kinds, expires: Date.now() + RULE_CACHE_TTL_MS });
    return kinds.has(kind);
  }

  invalidate(organizationId: string): void {
    this.kinds.delete(organizationId);
  }
}
