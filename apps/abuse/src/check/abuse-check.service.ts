import { Inject, Injectable } from '@nestjs/common';
import { Counter } from 'prom-client';
import { type AbuseActionView, type AbuseCheckData, type AbuseCheckOutcome, AbuseEvents, type AbusePatternType, type AbuseVerdict } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { type Logger, METRIC_PREFIX, Metrics } from '@touchpoint/observability';
import { LOGGER, UnitOfWork } from '@touchpoint/runtime';
import { Clock } from '@touchpoint/time';
import { detectPatterns, isGibberish, PATTERN_CHECK_EVERY, type RecentMessage, textHash } from '../patterns/pattern-detection.js';
import { OFFENSE_WINDOW_MS, penaltyFor } from '../penalties/penalty-ladder.js';
import { countMessage, type RateCounters } from '../rate-limits/windows.js';
import { AbuseRepository, type CounterRow } from './abuse.repository.js';

/** The built-in limits when no `rate_limit_config` row matches (seed 004 "Rate Limiting" defaults). */
const FALLBACK_LIMITS = { per_minute: 5, per_hour: 60, per_day: 200, per_instance: 500 };

/** How long a scope's limits are remembered in memory, ms (a config change applies within this). */
const LIMITS_CACHE_MS = 30_000;

/**
 * Longest lock wait of a batch of checks, ms: a batch that waits longer for a counter row (another
 * replica's check of the same conversation holds it) is rolled back and its checks run one by
 * one, so one held conversation does not hold the others' answers past messaging's deadline.
 */
const BATCH_LOCK_TIMEOUT_MS = 200;

/** Fields every check needs (a missing one is `validation_failed`). */
const REQUIRED_FIELDS = ['organization_id', 'contact_id', 'conversation_id', 'instance_id', 'channel', 'message_ref'] as const;

/**
 * Where one check reads and writes what it counts: the database at once (`abuse.check`), or what a
 * batch read up front and writes at its end (`abuse.check_batch`).
 */
interface CheckState {
  /** The throttle or block in force for the check's contact (a block first), or null. */
  restriction(input: AbuseCheckData): Promise<AbuseActionView | null>;
  /** The conversation's counter row, locked for the transaction. */
  counters(input: AbuseCheckData): Promise<CounterRow>;
  /** Saves the conversation's counters (a later check of it in the same batch reads them). */
  save(input: AbuseCheckData, counters: RateCounters, totalCount: number, recent: RecentMessage[]): Promise<void>;
  /** A throttle or block was applied to the check's contact: later checks read its restriction again. */
  restricted(input: AbuseCheckData): void;
}

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
    validate(input);
    const now = this.clock.now();
    const verdict = await this.uow.run((tx) => this.checkIn(tx, input, now, this.direct(tx, now)));
    this.count(verdict);
    return verdict;
  }

  /**
   * Checks (and counts) several inbound messages, each as `check` would, in the order given: a
   * message of a conversation is counted after the ones before it in the list (and sees a penalty
   * they applied). One transaction of set-based statements for all of them: the contacts'
   * restrictions read, the conversations' counter rows locked in id order, the counters written,
   * each in one statement (the rare penalty path runs per message in it). When that transaction
   * fails (a counter row held past BATCH_LOCK_TIMEOUT_MS, a deadlock), each message is checked on
   * its own, all at once. A single message is simply `check`.
   * @returns one outcome per input, in order: a verdict, or the error `check` throws (validation_failed)
   */
  async checkBatch(inputs: AbuseCheckData[]): Promise<AbuseCheckOutcome[]> {
    const outcomes: (AbuseCheckOutcome | undefined)[] = inputs.map((input) => {
      try {
        validate(input);
        return undefined;
      } catch (err) {
        return { error: { code: (err as AppError).code, message: (err as AppError).message } };
      }
    });
    const valid = inputs.map((input, i) => ({ input, i })).filter(({ i }) => !outcomes[i]);
    const alone = async ({ input, i }: { input: AbuseCheckData; i: number }) => {
      outcomes[i] = await this.check(input).then(
        (verdict): AbuseCheckOutcome => ({ verdict }),
        (err: Error): AbuseCheckOutcome => ({ error: { code: err instanceof AppError ? err.code : ErrorCode.Internal, message: err.message } }),
      );
    };
    if (valid.length === 1) await alone(valid[0]!);
    else if (valid.length > 1) {
      try {
        const now = this.clock.now();
        const verdicts = await this.uow.run(
          async (tx) => {
            const state = await this.prefetched(
              tx,
              valid.map((v) => v.input),
              now,
            );
            const out: AbuseVerdict[] = [];
            for (const { input } of valid) out.push(await this.checkIn(tx, input, now, state));
            await state.flush();
            return out;
          },
          { lockTimeoutMs: BATCH_LOCK_TIMEOUT_MS },
        );
        valid.forEach(({ i }, k) => {
          this.count(verdicts[k]!);
          outcomes[i] = { verdict: verdicts[k]! };
        });
      } catch (err) {
        this.logger.info({ event: 'abuse.check_batch_rolled_back', checks: valid.length, err: (err as Error).message, code: (err as { code?: unknown }).code }, 'batch of checks rolled back; each runs on its own');
        await Promise.all(valid.map(alone));
      }
    }
    return outcomes as AbuseCheckOutcome[];
  }

  private count(verdict: AbuseVerdict): void {
    this.checks.inc({ outcome: verdict.allowed ? 'allowed' : (verdict.limit_type ?? 'denied') });
  }

  /** One check's reads and writes, each a statement at once. */
  private direct(tx: Tx, now: Date): CheckState {
    return {
      restriction: (input) => this.repository.findActiveRestriction(tx, input.organization_id, input.contact_id, now),
      counters: (input) => this.repository.lockCounters(tx, input.organization_id, input.conversation_id, input.contact_id),
      save: (input, counters, totalCount, recent) => this.repository.saveCounters(tx, input.conversation_id, counters, totalCount, recent, now),
      restricted: () => undefined,
    };
  }

  /**
   * A batch's reads up front, in two statements (every contact's restriction; every counter row
   * locked, in conversation id order), and its counter writes kept for one statement at `flush`.
   * Only conversations under their instance cap are locked, as `check` locks only those; a contact
   * a check of the batch restricted is read again by the checks after it.
   */
  private async prefetched(tx: Tx, inputs: AbuseCheckData[], now: Date): Promise<CheckState & { flush: () => Promise<void> }> {
    const contactKey = (input: AbuseCheckData) => `${input.organization_id}|${input.contact_id}`;
    const restrictions = await this.repository.findActiveRestrictions(
      tx,
      inputs.map((i) => ({ organizationId: i.organization_id, contactId: i.contact_id })),
      now,
    );
    const counting: AbuseCheckData[] = [];
    for (const input of inputs) {
      if (restrictions.has(contactKey(input))) continue;
      const limits = await this.limitsFor(tx, input.organization_id, input.channel, input.user_type ?? 'all', now);
      if (input.instance_message_count < limits.per_instance) counting.push(input);
    }
    const rows = await this.repository.lockCountersMany(
      tx,
      counting.map((i) => ({ organizationId: i.organization_id, conversationId: i.conversation_id, contactId: i.contact_id })),
    );
    const reread = new Set<string>();
    const saves = new Map<string, { conversationId: string; counters: RateCounters; totalCount: number; recent: RecentMessage[] }>();
    return {
      restriction: async (input) => (reread.has(contactKey(input)) ? this.repository.findActiveRestriction(tx, input.organization_id, input.contact_id, now) : (restrictions.get(contactKey(input)) ?? null)),
      counters: async (input) => rows.get(input.conversation_id) ?? this.repository.lockCounters(tx, input.organization_id, input.conversation_id, input.contact_id),
      save: async (input, counters, totalCount, recent) => {
        const row = rows.get(input.conversation_id);
        if (row) rows.set(input.conversation_id, { ...row, ...counters, total_count: String(totalCount), recent });
        saves.set(input.conversation_id, { conversationId: input.conversation_id, counters, totalCount, recent });
      },
      restricted: (input) => void reread.add(contactKey(input)),
      flush: () => this.repository.saveCountersMany(tx, [...saves.values()], now),
    };
  }

  private async checkIn(tx: Tx, input: AbuseCheckData, now: Date, state: CheckState): Promise<AbuseVerdict> {
    const deny = (limit_type: AbuseVerdict['limit_type'], reset_at: Date | null, action: AbuseActionView | null = null, patterns: AbusePatternType[] = []): AbuseVerdict => ({
      allowed: false,
      limit_type,
      reset_at: reset_at ? reset_at.toISOString() : null,
      action,
      patterns,
    });

    const restriction = await state.restriction(input);
    if (restriction) return deny(restriction.action_type === 'block' ? 'blocked' : 'throttled', new Date(restriction.expires_at));

    const limits = await this.limitsFor(tx, input.organization_id, input.channel, input.user_type ?? 'all', now);
    // The cap counts the ACTIVE instance alone (seed 004 "Message-count rollover"); messaging rolls over and asks again.
    if (input.instance_message_count >= limits.per_instance) return deny('instance', null);

    const row = await state.counters(input);
    const recent: RecentMessage[] = Array.isArray(row.recent) ? row.recent : [];
    // A redelivered message (same wamid) was already counted: admit it again without counting twice.
    if (recent.some((m) => m.ref === input.message_ref)) return { allowed: true, limit_type: null, reset_at: null, action: null, patterns: [] };

    const counted = countMessage(row, limits, now);
    const total = Number(row.total_count);
    if (!counted.allowed) {
      await state.save(input, counted.counters, total, recent);
      return deny(counted.limit, counted.resetAt);
    }

    const window = [...recent, { ref: input.message_ref, at: input.sent_at ?? now.toISOString(), hash: textHash(input.text), gibberish: isGibberish(input.text) }].slice(-PATTERN_CHECK_EVERY);
    await state.save(input, counted.counters, total + 1, window);
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
    if (action.status === 'active') state.restricted(input);
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

/** @throws AppError validation_failed naming the first required field that is missing */
function validate(input: AbuseCheckData): void {
  for (const field of REQUIRED_FIELDS) {
    if (typeof input?.[field] !== 'string' || input[field].length === 0) throw new AppError(ErrorCode.ValidationFailed, `${field} is required`, { field });
  }
}
