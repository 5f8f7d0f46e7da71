import { Inject, Injectable, type OnApplicationBootstrap, type OnApplicationShutdown } from '@nestjs/common';
import pg from 'pg';
import { CONSENT_MODES, type FollowupSettingsView, type SettingsEntitlementData, type SettingsUpdateData } from '@touchpoint/contracts';
import { poolOf, quoteIdent, rowsOf, type Tx } from '@touchpoint/database';
import type { Logger } from '@touchpoint/observability';
import { APP_CONFIG, LOGGER, UnitOfWork } from '@touchpoint/runtime';
import { Clock, sendWindowProblems } from '@touchpoint/time';
import type { FollowupsConfig } from '../followups.config.js';
import { check, revisionConflict } from '../input-checks/input-checks.js';
import { SettingsRepository } from './settings.repository.js';

/** How long a cached copy of an organization's settings is trusted without an invalidation (seed 000: 30 s TTL). */
export const SETTINGS_CACHE_TTL_MS = 30_000;

/**
 * Organization follow-up settings: read through a per-process cache, written
 * with a revision check. A change sends a Postgres NOTIFY that every replica LISTENs to, so each
 * process drops its copy at once; the TTL is the backstop when a notification is lost. No bus event:
 * settings are followups' own, and no other service keeps a copy of them.
 */
@Injectable()
export class SettingsService implements OnApplicationBootstrap, OnApplicationShutdown {
  private readonly cache = new Map<string, { value: FollowupSettingsView; expires: number }>();
  private listener?: pg.Client;
  private running = false;

  constructor(
    private readonly uow: UnitOfWork,
    private readonly repository: SettingsRepository,
    private readonly clock: Clock,
    @Inject(APP_CONFIG) private readonly config: FollowupsConfig,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  private get channel(): string {
    return `followups_settings_${this.uow.schema}`;
  }

  /** The organization's settings (cached up to SETTINGS_CACHE_TTL_MS). */
  async get(organizationId: string, tx?: Tx): Promise<FollowupSettingsView> {
    const hit = this.cache.get(organizationId);
    if (hit && hit.expires > Date.now()) return hit.value;
    // Inside a transaction, read on its connection: a second one from the pool, asked for while
    // every release worker holds one, would never come (the pool waits without a deadline).
    const value = await this.repository.get(tx ?? poolOf(this.uow.dataSource), organizationId);
    this.cache.set(organizationId, { value, expires: Date.now() + SETTINGS_CACHE_TTL_MS });
    return value;
  }

  /** Drops a cached copy (on a NOTIFY, or after a local write). */
  invalidate(organizationId: string): void {
    this.cache.delete(organizationId);
  }

  /**
   * Updates the given fields.
   * @throws AppError validation_failed (bad values), revision_conflict (expected_revision is stale)
   */
  async update(input: SettingsUpdateData): Promise<FollowupSettingsView> {
    check(input)
      .uuid('organization_id')
      .int('expected_revision', 0, 2 ** 31 - 1)
      .done();
    const now = this.clock.now();
    const saved = await this.uow.run(async (tx) => {
      const current = await this.repository.get(tx, input.organization_id);
      const next = { ...current, ...pickDefined(input), customer_id: input.organization_id };
      validateSettings(next);
      const result = await this.repository.save(tx, next, input.expected_revision, now);
      if (!result) throw revisionConflict('settings', input.expected_revision, current.revision);
      await rowsOf(tx, `SELECT pg_notify($1, $2)`, [this.channel, input.organization_id]);
      return result;
    });
    this.invalidate(input.organization_id);
    return saved;
  }

  /**
   * Turns the organization's follow-ups entitlement on or off (seed 000 "plan lost → stop"): off
   * stops each live enrollment at its next release (reason `plan_lost`) and refuses new ones.
   * Every replica drops its cached copy at once (NOTIFY), so a release on another process sees it
   * within the LISTEN delay, at worst the cache TTL.
   * @throws AppError validation_failed (bad organization id or a non-boolean)
   */
  async setEntitlement(input: SettingsEntitlementData): Promise<FollowupSettingsView> {
    check(input)
      .uuid('organization_id')
      .custom('followups_enabled', typeof input.followups_enabled === 'boolean' ? [] : ['followups_enabled must be a boolean'])
      .done();
    const saved = await this.uow.run(async (tx) => {
      const result = await this.repository.setEntitlement(tx, input.organization_id, input.followups_enabled, this.clock.now());
      await rowsOf(tx, `SELECT pg_notify($1, $2)`, [this.channel, input.organization_id]);
      return result;
    });
    this.invalidate(input.organization_id);
    this.logger.info({ event: 'followups.entitlement_changed', organization_id: input.organization_id, followups_enabled: input.followups_enabled }, 'follow-ups entitlement changed');
    return saved;
  }

  async onApplicationBootstrap(): Promise<void> {
    this.running = true;
    void this.listen();
  }

  async onApplicationShutdown(): Promise<void> {
    this.running = false;
    await this.listener?.end().catch(() => undefined);
  }

  private async listen(): Promise<void> {
    while (this.running) {
      const client = new pg.Client({ connectionString: this.config.DATABASE_URL });
      try {
        await client.connect();
        this.listener = client;
        client.on('notification', (n) => n.payload && this.invalidate(n.payload));
        await client.query(`LISTEN ${quoteIdent(this.channel)}`);
        // A reconnect may have missed notifications: start clean.
        this.cache.clear();
        await new Promise<void>((resolve) => {
          client.once('error', () => resolve());
          client.once('end', () => resolve());
        });
      } catch (err) {
        if (this.running) this.logger.warn({ event: 'followups.settings_listen_failed', err: (err as Error).message }, 'settings LISTEN failed; TTL only');
      }
      await client.end().catch(() => undefined);
      if (this.running) await new Promise((r) => setTimeout(r, 1000));
    }
  }
}

const UPDATABLE = ['send_window', 'contact_daily_cap', 'monthly_send_quota', 'consent_mode', 'consent_tag', 'max_live_enrollments', 'retention_days', 'approved_templates'] as const;

function pickDefined(input: SettingsUpdateData): Partial<FollowupSettingsView> {
  const out: Record<string, unknown> = {};
  for (const key of UPDATABLE) if (input[key] !== undefined) out[key] = input[key];
  return out as Partial<FollowupSettingsView>;
}

/** @throws AppError validation_failed naming each bad field */
function validateSettings(s: Omit<FollowupSettingsView, 'revision' | 'updated_at'>): void {
  const c = check(s as unknown as Record<string, unknown>)
    .int('contact_daily_cap', 1, 100)
    .int('monthly_send_quota', 1, 10_000_000, true)
    .oneOf('consent_mode', CONSENT_MODES)
    .string('consent_tag', 1, 64)
    .int('max_live_enrollments', 1, 100_000_000, true)
    .int('retention_days', 1, 3650);
  const w = s.send_window as unknown as Record<string, unknown> | undefined;
  c.custom('send_window', w && typeof w === 'object' ? sendWindowProblems({ startHour: w.start_hour as number, endHour: w.end_hour as number, days: w.days as number[], timezone: w.timezone as string }) : ['send_window must be {start_hour, end_hour, days, timezone}']);
  const templates = s.approved_templates as unknown;
  const okTemplates =
    Array.isArray(templates) &&
    templates.length <= 500 &&
    templates.every((t) => t && typeof t.name === 'string' && /^[a-z0-9_]{1,512}$/.test(t.name) && typeof t.language === 'string' && /^[a-z]{2,3}(_[A-Z]{2})?$/.test(t.language) && Number.isInteger(t.parameter_count) && t.parameter_count >= 0 && t.parameter_count <= 20);
  if (!okTemplates) c.custom('approved_templates', ['approved_templates must be up to 500 {name, language, parameter_count}']);
  c.done();
}
