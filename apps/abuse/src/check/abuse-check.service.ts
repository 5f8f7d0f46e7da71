import { Inject, Injectable } from '@nestjs/common';
import { Counter } from 'prom-client';
import { type AbuseActionView, type AbuseCheckData, AbuseEvents, type AbusePatternType, type AbuseVerdict } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { type Logger, METRIC_PREFIX, Metrics } from '@touchpoint/observability';
import { LOGGER, UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { detectPatterns, isGibberish, PATTERN_CHECK_EVERY, type RecentMessage, textHash } from '../patterns/pattern-detection.js';
import { OFFENSE_WINDOW_MS, penaltyFor } from '../penalties/penalty-ladder.js';
import { countMessage } from '../rate-limits/windows.js';
import { AbuseRepository } from './abuse.repository.js';

/** The built-in limits when no `rate_limit_config` row matches (seed 004 "Rate Limiting" defaults). */
const FALLBACK_LIMITS = { per_minute: 5, per_hour: 60, per_day: 200, per_instance: 500 };

/** How long a scope's limits are remembered in memory, ms (a config change applies within this). */
const LIMITS_CACHE_MS = 30_000;

/**
 * The check messaging runs before it accepts an inbound message (seed 004 "Real-Time Protection"):
 * active penalties, the per-instance cap (an instruction to roll over), the clock-reset rate
 * windows, and every 5th message the pattern detector with its progressive penalties.
 */
@Injectable()
export class AbuseCheckService {
  private readonly checks: Counter<'outcome'>;
  private readonly actions: Counter<'action_type'>;
  private readonly patterns: Counter<'pattern'>;
  private readonly limitsCache = new Map<string, { limits: typeof FALLBACK_LIMITS; until: number }>();

  constructor(
    private readonly uow: UnitOfWork,
    private readonly repository: AbuseRepository,
    private readonly clock: Clock,
    metrics: Metrics,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {
    this.checks = new Counter({
      name: `${METRIC_PREFIX}abuse_checks_total`,
      help: 'Abuse checks by outcome (allowed, or the limit that denied)',
      labelNames: ['outcome'],
      registers: [metrics.registry],
    });
    this.actions = new Counter({ name: `${METRIC_PREFIX}abuse_actions_total`, help: 'Penalties applied, by type', labelNames: ['action_type'], registers: [metrics.registry] });
    this.patterns = new Counter({ name: `${METRIC_PREFIX}abuse_patterns_total`, help: 'Abuse patterns detected, by pattern', labelNames: ['pattern'], registers: [metrics.registry] });
  }

  /**
   * Checks (and counts) one inbound message.
   * @returns the verdict; `limit_type = 'instance'` with `reset_at = null` means "roll over, then ask again"
   * @throws AppError validation_failed when a required field is missing
   */
  async check(input: AbuseCheckData): Promise<AbuseVerdict> {
    for (const field of ['organization_id', 'contact_id', 'conversation_id', 'instance_id', 'channel', 'message_ref'] as const) {
      if (typeof input?.[field] !== 'string' || input[field].length === 0) throw new AppError(ErrorCode.ValidationFailed, `${field} is required`, { field });
    }
    const verdict = await this.uow.run((tx) => this.checkIn(tx, input, this.clock.now()));
    this.checks.inc({ outcome: verdict.allowed ? 'allowed' : (verdict.limit_type ?? 'denied') });
    return verdict;
  }

  private async checkIn(tx: Tx, input: AbuseCheckData, now: Date): Promise<AbuseVerdict> {
    const deny = (limit_type: AbuseVerdict['limit_type'], reset_at: Date | null, action: AbuseActionView | null = null, patterns: AbusePatternType[] = []): AbuseVerdict => ({
      allowed: false,
      limit_type,
      reset_at: reset_at ? reset_at.toISOString() : null,
      action,
      patterns,
    });

    const restriction = await this.repository.findActiveRestriction(tx, input.organization_id, input.contact_id, now);
    if (restriction) return deny(restriction.action_type === 'block' ? 'blocked' : 'throttled', new Date(restriction.expires_at));

    const limits = await this.limitsFor(tx, input.organization_id, input.channel, input.user_type ?? 'all', now);
    // The cap counts the ACTIVE instance alone (seed 004 "Message-count rollover"); messaging rolls over and asks again.
    if (input.instance_message_count >= limits.per_instance) return deny('instance', null);

    const row = await this.repository.lockCounters(tx, input.organization_id, input.conversation_id, input.contact_id);
    const recent: RecentMessage[] = Array.isArray(row.recent) ? row.recent : [];
    // A redelivered message (same wamid) was already counted: admit it again without counting twice.
    if (recent.some((m) => m.ref === input.message_ref)) return { allowed: true, limit_type: null, reset_at: null, action: null, patterns: [] };

    const counted = countMessage(row, limits, now);
    const total = Number(row.total_count);
    if (!counted.allowed) {
      await this.repository.saveCounters(tx, input.conversation_id, counted.counters, total, recent, now);
      return deny(counted.limit, counted.resetAt);
    }

    const window = [...recent, { ref: input.message_ref, at: input.sent_at ?? now.toISOString(), hash: textHash(input.text), gibberish: isGibberish(input.text) }].slice(-PATTERN_CHECK_EVERY);
    await this.repository.saveCounters(tx, input.conversation_id, counted.counters, total + 1, window, now);
    if ((total + 1) % PATTERN_CHECK_EVERY !== 0) return { allowed: true, limit_type: null, reset_at: null, action: null, patterns: [] };

    const found = detectPatterns(window);
    if (found.length === 0) return { allowed: true, limit_type: null, reset_at: null, action: null, patterns: [] };
    for (const pattern of found) {
      await this.repository.insertPattern(tx, {
        organizationId: input.organization_id,
        contactId: input.contact_id,
        conversationId: input.conversation_id,
        type: pattern.type,
        confidence: pattern.confidence,
        details: pattern.details,
        at: now,
      });
      this.patterns.inc({ pattern: pattern.type });
    }
    // One check is one offense, however many patterns it showed.
    const offenses = await this.repository.countOffensesSince(tx, input.organization_id, input.contact_id, new Date(now.getTime() - OFFENSE_WINDOW_MS));
    const offenseNumber = offenses + 1;
    const penalty = penaltyFor(offenseNumber);
    const action = await this.repository.insertAction(tx, {
      organizationId: input.organization_id,
      contactId: input.contact_id,
      conversationId: input.conversation_id,
      type: penalty.type,
      offenseNumber,
      reason: found.map((p) => p.type).join(','),
      startsAt: now,
      expiresAt: new Date(now.getTime() + penalty.durationMs),
    });
    await tx.publish({
      event_id: `abuse.action.applied:${action.action_id}`,
      type: AbuseEvents.ActionApplied,
      organization_id: input.organization_id,
      data: { action },
    });
    this.actions.inc({ action_type: action.action_type });
    this.logger.warn({ event: 'abuse.action_applied', organization_id: input.organization_id, contact_id: input.contact_id, action_id: action.action_id, action_type: action.action_type, offense_number: offenseNumber, patterns: found.map((p) => p.type) }, 'abuse penalty applied');
    const patterns = found.map((p) => p.type);
    if (penalty.type === 'warning') return { allowed: true, limit_type: null, reset_at: null, action, patterns };
    return deny(penalty.type === 'block' ? 'blocked' : 'throttled', new Date(action.expires_at), action, patterns);
  }

  /** The limits of a scope, remembered for LIMITS_CACHE_MS (configuration changes rarely; every check reads it). */
  private async limitsFor(tx: Tx, organizationId: string, channel: string, userType: string, now: Date) {
    const key = `${organizationId}|${channel}|${userType}`;
    const cached = this.limitsCache.get(key);
    if (cached && cached.until > now.getTime()) return cached.limits;
    const limits = (await this.repository.findLimits(tx, organizationId, channel, userType)) ?? FALLBACK_LIMITS;
    if (this.limitsCache.size > 10_000) this.limitsCache.clear();
    this.limitsCache.set(key, { limits, until: now.getTime() + LIMITS_CACHE_MS });
    return limits;
  }

  /** Lists a contact's (or the organization's) penalties, newest first. */
  listActions(organizationId: string, contactId: string | undefined, activeOnly: boolean): Promise<AbuseActionView[]> {
    return this.uow.run((tx) => this.repository.listActions(tx, organizationId, contactId, activeOnly, this.clock.now()));
  }

  /**
   * The throttle or block in force for a contact now (a block first), or null. A plain read of the
   * actions, outside the counting transaction, so it can answer when a check cannot.
   * @throws AppError validation_failed when organization_id or contact_id is missing
   */
  activeRestriction(organizationId: string, contactId: string): Promise<AbuseActionView | null> {
    for (const [field, value] of [
      ['organization_id', organizationId],
      ['contact_id', contactId],
    ] as const) {
      if (typeof value !== 'string' || value.length === 0) throw new AppError(ErrorCode.ValidationFailed, `${field} is required`, { field });
    }
    return this.uow.run((tx) => this.repository.findActiveRestriction(tx, organizationId, contactId, this.clock.now()));
  }

  listConfig(organizationId?: string) {
    return this.uow.run((tx) => this.repository.listConfig(tx, organizationId));
  }
}
