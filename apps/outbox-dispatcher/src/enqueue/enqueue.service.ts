import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { OUTBOX_CHANNELS, OUTBOX_ENTRIES_BY_KEY_MAX, type OutboxCancelData, type OutboxCancelResult, type OutboxEnqueueData, type OutboxEnqueueResult, type OutboxEntriesByKeyData, type OutboxEntryView, OutboxEvents, type OutboxPayload } from '@touchpoint/contracts';
import { notifySoon, type Tx } from '@touchpoint/database';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { toRecipientKey } from '@touchpoint/phone';
import { APP_CONFIG, UnitOfWork } from '@touchpoint/runtime';
import { truncateText } from '@touchpoint/text';
import { Clock } from '@touchpoint/time';
import { entryEvent } from '../drain/entry-events.js';
import { type EntryRow, type NewEntry, organizationKeyOf, OutboxRepository, pairKeyOf } from '../drain/outbox.repository.js';
import type { OutboxDispatcherConfig } from '../outbox-dispatcher.config.js';
import { ProviderRegistry } from '../providers/provider-registry.js';
import type { SenderRow } from '../senders/senders.repository.js';
import { checkForEnqueue, type SenderRequest, senderRequestOf, SendersService } from '../senders/senders.service.js';

/** Longest idempotency key accepted, characters. */
const IDEMPOTENCY_KEY_MAX = 512;
/** Read receipts get one attempt: a late read receipt has no value (seed 004 "Read receipts"). */
const READ_RECEIPT_MAX_ATTEMPTS = 1;

/** The NOTIFY channel that wakes dispatchers of a schema when an entry is enqueued. */
export const wakeChannelOf = (schema: string): string => `outbox_wake_${schema}`;

/** An enqueue command that passed validation: its pacing key, its log context and requester as stored. */
type CheckedEnqueue = Omit<OutboxEnqueueData, 'requester'> & { payload: OutboxPayload; pacingKey: string; log_context: Record<string, string | number>; requester: string | null };

/**
 * What the preparation of a batch of enqueues read and wrote in its transaction (`prepareBatch`),
 * for the handlers that follow in it. Every key of `keys` stays locked until the transaction ends,
 * so what was read of them stays true, and each handler records the entry it wrote or answered.
 */
interface EnqueueBatch {
  /** The instant of every entry and pair of the batch (one `Clock.now()`). */
  now: Date;
  /** The keys locked and read (`organizationKeyOf`). */
  keys: Set<string>;
  /** Each key's entry, once there is one. */
  entries: Map<string, EntryRow>;
  /** The sender row of each request read (`senderRequestOf`), undefined when there is none. */
  senders: Map<string, SenderRow | undefined>;
  /** The pairs upserted, by `pairKeyOf`. */
  pairs: Map<string, string>;
  /** The keys whose cancels in advance were read, and those that have one. */
  cancelsRead: Set<string>;
  cancelledInAdvance: Set<string>;
  /** The keys whose entry the preparation inserted, until the handler of the command it was written for answers it as created. */
  created: Set<string>;
}

/** The row of a new entry for `c`, sent by `senderId` in pair `pairId`. */
function newEntry(c: CheckedEnqueue, senderId: string, pairId: string, maxAttempts: number): NewEntry {
  return {
    id: randomUUID(),
    organization_id: c.organization_id,
    channel: c.channel,
    sender_id: senderId,
    pair_id: pairId,
    recipient: c.to,
    pacing_key: c.pacingKey,
    idempotency_key: c.idempotency_key,
    payload_type: c.payload.type,
    payload: c.payload,
    max_attempts: c.payload.type === 'read_receipt' ? READ_RECEIPT_MAX_ATTEMPTS : maxAttempts,
    log_context: c.log_context,
    requester: c.requester,
    // Read receipts are never held: they are ours, not the requester's words.
    stop_on_reply: c.stop_on_reply === true && c.payload.type !== 'read_receipt',
  };
}

const keyOf = (c: { organization_id: string; idempotency_key: string }): string => organizationKeyOf(c.organization_id, c.idempotency_key);
const requestOf = (c: CheckedEnqueue): SenderRequest => ({ organizationId: c.organization_id, channel: c.channel, senderId: c.sender_id });

/**
 * Enqueue: the single chokepoint where an outbound send becomes a durable row before any wire call
 * (seed 004 "Enqueue before wire"), and where the recipient's pacing key is canonicalised. Also
 * cancel by key, and the entry reads of the RPC edge.
 */
@Injectable()
export class EnqueueService {
  /** The prepared batch of enqueues of a consumer transaction (`prepareBatch`). */
  private readonly batches = new WeakMap<Tx, EnqueueBatch>();
  /** The keys a consumer transaction of cancels locked up front (`lockCancelBatch`). */
  private readonly lockedForCancel = new WeakMap<Tx, Set<string>>();

  constructor(
    private readonly uow: UnitOfWork,
    private readonly repository: OutboxRepository,
    private readonly senders: SendersService,
    private readonly providers: ProviderRegistry,
    private readonly clock: Clock,
    @Inject(APP_CONFIG) private readonly config: OutboxDispatcherConfig,
  ) {}

  /**
   * Validates and writes one entry; the same key twice answers the first entry (`created: false`).
   * Runs in `tx` when given (the bus command's inbox transaction), else in its own. In a consumer
   * batch whose `prepareBatch` covered this command's key, it uses what that read and wrote (the
   * entry too: one insert for the whole batch) and costs no statement of its own in the common
   * case; otherwise it prepares a batch of one first (the key's lock, its entry, the sender, the
   * pair, the cancel in advance, the insert).
   * @throws AppError validation_failed, unsupported_channel, invalid_payload (details.errors),
   *   invalid_recipient, sender_not_found, sender_disconnected — nothing is written
   */
  async enqueue(data: OutboxEnqueueData, tx?: Tx): Promise<OutboxEnqueueResult> {
    const checked = this.validate(data);
    const work = async (t: Tx): Promise<OutboxEnqueueResult> => {
      const prepared = this.batches.get(t);
      const batch = prepared?.keys.has(keyOf(checked)) ? prepared : await this.prepare(t, [checked]);
      return this.write(t, batch, checked);
    };
    return tx ? work(tx) : this.uow.run(work);
  }

  /**
   * Prepares, in `tx`, the enqueues of one consumer batch (`BeforeBusBatch`) for their handlers
   * (`enqueue` in the same `tx`): locks all their keys, reads their entries, their senders and
   * their cancels in advance, upserts the pairs of the entries they will write and inserts those
   * entries, one statement each, in that order. A command that fails validation is left out (its handler rejects it alone,
   * before any SQL).
   */
  async prepareBatch(items: OutboxEnqueueData[], tx: Tx): Promise<void> {
    const checked = items.flatMap((data) => {
      try {
        return [this.validate(data)];
      } catch {
        return [];
      }
    });
    if (checked.length > 0) this.batches.set(tx, await this.prepare(tx, checked));
  }

  /**
   * Locks, reads and upserts what `commands` need, in their order (see `prepareBatch`). Locks
   * before reads: an entry or cancel committed by the transaction that held a key's lock is seen
   * only by a statement that starts after the lock is granted (READ COMMITTED). The key locks come
   * before the pair rows, in one order each, as in a batch of one: no two enqueue transactions wait
   * for each other in a cycle. Statements with nothing to do are skipped (a key with an entry: two).
   */
  private async prepare(tx: Tx, commands: CheckedEnqueue[]): Promise<EnqueueBatch> {
    const now = this.clock.now();
    const keys = new Map(commands.map((c) => [keyOf(c), { organizationId: c.organization_id, idempotencyKey: c.idempotency_key }]));
    await this.repository.lockKeys(tx, [...keys.values()]);
    const entries = new Map((await this.repository.findByOrganizationKeys(tx, [...keys.values()])).map((row) => [organizationKeyOf(row.organization_id, row.idempotency_key), row]));
    const batch: EnqueueBatch = { now, keys: new Set(keys.keys()), entries, senders: new Map(), pairs: new Map(), cancelsRead: new Set(), cancelledInAdvance: new Set(), created: new Set() };
    const writing = commands.filter((c) => !entries.has(keyOf(c)));
    if (writing.length === 0) return batch;
    batch.senders = await this.senders.readForEnqueue(tx, writing.map(requestOf));
    // Which command writes each key's entry: the first, in the handlers' order, whose sender is
    // usable (a later one of that key answers its entry). A command whose sender was left unread
    // is resolved by its handler, which then upserts its own pair: none is prepared for its key.
    const decided = new Set<string>();
    const pairs: { organizationId: string; senderId: string; pacingKey: string }[] = [];
    /** The command that writes each key's entry, with its sender, when the sender was read and takes it. */
    const writers: { command: CheckedEnqueue; senderId: string }[] = [];
    for (const c of writing) {
      const key = keyOf(c);
      const request = senderRequestOf(requestOf(c));
      if (decided.has(key)) continue;
      if (!batch.senders.has(request)) {
        decided.add(key);
        continue;
      }
      try {
        const senderId = checkForEnqueue(batch.senders.get(request), c.channel, c.sender_id).id;
        pairs.push({ organizationId: c.organization_id, senderId, pacingKey: c.pacingKey });
        writers.push({ command: c, senderId });
        decided.add(key);
      } catch {
        // Its handler rejects it; a later command of the key may still write the entry.
      }
    }
    batch.pairs = await this.repository.upsertPairsForEnqueue(tx, pairs, now, this.config.WHATSAPP_PAIR_MIN_SEND_INTERVAL_MS);
    const mayWrite = [...decided].map((key) => keys.get(key)!);
    batch.cancelsRead = decided;
    batch.cancelledInAdvance = new Set((await this.repository.cancelledInAdvance(tx, mayWrite)).map((k) => organizationKeyOf(k.organizationId, k.idempotencyKey)));
    // The entries themselves, in one insert for the batch instead of one per handler; each handler
    // then answers its own (`write`) and does what follows a new entry (pause, cancel in advance).
    const inserted = await this.repository.insertEntries(
      tx,
      writers.flatMap(({ command, senderId }) => {
        const pairId = batch.pairs.get(pairKeyOf(senderId, command.pacingKey));
        return pairId ? [newEntry(command, senderId, pairId, this.config.OUTBOX_MAX_ATTEMPTS)] : [];
      }),
      now,
    );
    for (const row of inserted) {
      const key = organizationKeyOf(row.organization_id, row.idempotency_key);
      batch.entries.set(key, row);
      batch.created.add(key);
    }
    return batch;
  }

  /** One command of a prepared batch (its key covered): answers its key's entry or writes it. */
  private async write(t: Tx, batch: EnqueueBatch, checked: CheckedEnqueue): Promise<OutboxEnqueueResult> {
    const key = keyOf(checked);
    const existing = batch.entries.get(key);
    const request = senderRequestOf(requestOf(checked));
    if (existing && batch.created.has(key)) {
      // The preparation wrote this key's entry for the first command of the key whose sender takes
      // it: a command before that one fails here on its sender, as it would have alone.
      const sender = checkForEnqueue(batch.senders.get(request), checked.channel, checked.sender_id);
      batch.created.delete(key);
      return this.settleNew(t, batch, checked, sender, existing);
    }
    if (existing) return { entry_id: existing.id, status: existing.status, created: false };
    const now = batch.now;
    const sender = batch.senders.has(request) ? checkForEnqueue(batch.senders.get(request), checked.channel, checked.sender_id) : await this.senders.resolveForEnqueue(t, checked.organization_id, checked.channel, checked.sender_id);
    let pairId = batch.pairs.get(pairKeyOf(sender.id, checked.pacingKey));
    if (!pairId) {
      pairId = await this.repository.upsertPairForEnqueue(t, checked.organization_id, sender.id, checked.pacingKey, now, this.config.WHATSAPP_PAIR_MIN_SEND_INTERVAL_MS);
      batch.pairs.set(pairKeyOf(sender.id, checked.pacingKey), pairId);
    }
    const { row, created } = await this.repository.insertEntry(t, newEntry(checked, sender.id, pairId, this.config.OUTBOX_MAX_ATTEMPTS), now);
    batch.entries.set(key, row);
    if (!created) return { entry_id: row.id, status: row.status, created };
    return this.settleNew(t, batch, checked, sender, row);
  }

  /** What follows writing a new entry: a paused number delays it, a cancel in advance cancels it, idle dispatchers are woken. */
  private async settleNew(t: Tx, batch: EnqueueBatch, checked: CheckedEnqueue, sender: SenderRow, row: EntryRow): Promise<OutboxEnqueueResult> {
    const key = keyOf(checked);
    const now = batch.now;
    // Meta said the number is over its throughput (an asynchronous 130429): a new send waits with the queued ones.
    if (sender.paused_until && new Date(sender.paused_until).getTime() > now.getTime()) await this.repository.delaySender(t, sender.id, new Date(sender.paused_until));
    if (batch.cancelsRead.has(key) ? batch.cancelledInAdvance.has(key) : await this.repository.isCancelledInAdvance(t, checked.organization_id, checked.idempotency_key)) {
      // The reply won the race: its cancel arrived first, so this entry is born cancelled.
      const cancelled = await this.repository.cancelPending(t, checked.organization_id, checked.idempotency_key, now);
      if (cancelled) {
        batch.entries.set(key, cancelled);
        await t.publish(entryEvent(OutboxEvents.EntryCancelled, cancelled, { reason: 'requested' }));
        return { entry_id: cancelled.id, status: cancelled.status, created: true };
      }
    }
    // After the commit, outside it (a NOTIFY in the transaction would serialise commits on the
    // notify-queue lock): idle dispatchers of every replica look at once, not at their next timer.
    t.afterCommit(() => notifySoon(this.uow.dataSource, wakeChannelOf(this.uow.schema)));
    return { entry_id: row.id, status: row.status, created: true };
  }

  /**
   * Cancels a pending entry by key; a claimed or settled one is `not_cancellable`. A key with no
   * entry yet is remembered, so an enqueue arriving later (it travels through messaging, the cancel
   * does not) is written cancelled: the reply wins either way (DESIGN §5.3).
   */
  async cancel(data: OutboxCancelData, tx?: Tx): Promise<OutboxCancelResult> {
    if (typeof data?.organization_id !== 'string' || typeof data.idempotency_key !== 'string') throw new AppError(ErrorCode.ValidationFailed, 'organization_id and idempotency_key are required');
    const work = async (t: Tx): Promise<OutboxCancelResult> => {
      if (!this.lockedForCancel.get(t)?.has(keyOf(data))) await this.repository.lockKey(t, data.organization_id, data.idempotency_key);
      // What an enqueue batch of this transaction read of the key may be about to change.
      this.batches.delete(t);
      const cancelled = await this.repository.cancelPending(t, data.organization_id, data.idempotency_key, this.clock.now());
      if (cancelled) {
        await t.publish(entryEvent(OutboxEvents.EntryCancelled, cancelled, { reason: 'requested' }));
        return { outcome: 'cancelled', entry_id: cancelled.id, status: 'cancelled' };
      }
      const existing = await this.repository.findByKey(t, data.organization_id, data.idempotency_key);
      if (existing) return { outcome: 'not_cancellable', entry_id: existing.id, status: existing.status };
      await this.repository.recordCancellation(t, data.organization_id, data.idempotency_key, this.clock.now());
      return { outcome: 'cancelled_in_advance' };
    };
    return tx ? work(tx) : this.uow.run(work);
  }

  /**
   * Locks, in `tx`, the keys of one consumer batch of cancels (`BeforeBusBatch`) in one statement
   * and one order (`OutboxRepository.lockKeys`), the order an enqueue batch takes them in: taken one
   * by one in the messages' order, they could wait in a cycle with an enqueue batch's. A command
   * without a key is left out (its handler rejects it).
   */
  async lockCancelBatch(items: OutboxCancelData[], tx: Tx): Promise<void> {
    const keys = items.filter((d) => typeof d?.organization_id === 'string' && typeof d.idempotency_key === 'string').map((d) => ({ organizationId: d.organization_id, idempotencyKey: d.idempotency_key }));
    if (keys.length === 0) return;
    await this.repository.lockKeys(tx, keys);
    this.lockedForCancel.set(tx, new Set(keys.map((k) => organizationKeyOf(k.organizationId, k.idempotencyKey))));
  }

  /** @throws AppError not_found (also for another organization's entry) */
  async get(organizationId: string, entryId: string): Promise<OutboxEntryView> {
    const row = await this.uow.run((tx) => this.repository.findById(tx, entryId));
    if (!row || row.organization_id !== organizationId) throw new AppError(ErrorCode.NotFound, 'outbox entry not found');
    return toEntryView(row);
  }

  /**
   * The entries of up to `OUTBOX_ENTRIES_BY_KEY_MAX` keys of one organization; a key with no entry
   * is left out of the answer.
   * @throws AppError validation_failed (organization_id, idempotency_keys)
   */
  async getByKeys(data: OutboxEntriesByKeyData): Promise<{ items: OutboxEntryView[] }> {
    if (typeof data?.organization_id !== 'string' || data.organization_id === '') throw new AppError(ErrorCode.ValidationFailed, 'organization_id is required', { field: 'organization_id' });
    const keys = data.idempotency_keys;
    if (!Array.isArray(keys) || keys.length === 0 || keys.length > OUTBOX_ENTRIES_BY_KEY_MAX || keys.some((k) => typeof k !== 'string')) {
      throw new AppError(ErrorCode.ValidationFailed, `idempotency_keys must be 1 to ${OUTBOX_ENTRIES_BY_KEY_MAX} strings`, { field: 'idempotency_keys' });
    }
    const rows = await this.uow.run((tx) => this.repository.findByKeys(tx, data.organization_id, keys));
    return { items: rows.map(toEntryView) };
  }

  private validate(data: OutboxEnqueueData): CheckedEnqueue {
    if (!data || typeof data !== 'object') throw new AppError(ErrorCode.ValidationFailed, 'enqueue data must be an object');
    if (typeof data.organization_id !== 'string' || data.organization_id === '') throw new AppError(ErrorCode.ValidationFailed, 'organization_id is required', { field: 'organization_id' });
    if (typeof data.idempotency_key !== 'string' || data.idempotency_key === '' || data.idempotency_key.length > IDEMPOTENCY_KEY_MAX) {
      throw new AppError(ErrorCode.ValidationFailed, `idempotency_key is required (at most ${IDEMPOTENCY_KEY_MAX} characters)`, { field: 'idempotency_key' });
    }
    if (!OUTBOX_CHANNELS.includes(data.channel)) throw new AppError(ErrorCode.ValidationFailed, `channel must be one of ${OUTBOX_CHANNELS.join(', ')}`, { field: 'channel' });
    if (data.stop_on_reply !== undefined && typeof data.stop_on_reply !== 'boolean') throw new AppError(ErrorCode.ValidationFailed, 'stop_on_reply must be a boolean', { field: 'stop_on_reply' });
    if (data.sender_id !== undefined && data.sender_id !== null && typeof data.sender_id !== 'string') throw new AppError(ErrorCode.ValidationFailed, 'sender_id must be a string', { field: 'sender_id' });
    const adapter = this.providers.get(data.channel);
    if (!adapter) throw new AppError(ErrorCode.UnsupportedChannel, `channel ${data.channel} has no adapter yet`);
    const problems = adapter.validate(data.payload, data.idempotency_key);
    if (problems.length) throw new AppError(ErrorCode.InvalidPayload, 'the payload is not valid', { errors: problems });
    if (typeof data.to !== 'string') throw new AppError(ErrorCode.InvalidRecipient, 'to is required');
    const pacingKey = toRecipientKey(data.channel, data.to);
    if (!pacingKey) throw new AppError(ErrorCode.InvalidRecipient, `"${truncateText(data.to, 64)}" is not a ${data.channel} address`);
    const logContext: Record<string, string | number> = {};
    if (data.log_context !== undefined) {
      if (typeof data.log_context !== 'object' || data.log_context === null || Array.isArray(data.log_context)) throw new AppError(ErrorCode.ValidationFailed, 'log_context must be an object', { field: 'log_context' });
      for (const [k, v] of Object.entries(data.log_context)) {
        if (typeof v !== 'string' && typeof v !== 'number') throw new AppError(ErrorCode.ValidationFailed, `log_context.${k} must be a string or number`, { field: 'log_context' });
        logContext[k] = v;
      }
    }
    return { ...data, payload: data.payload as OutboxPayload, pacingKey, log_context: logContext, requester: typeof data.requester === 'string' ? data.requester : null };
  }
}

/** An entry as RPC answers show it. */
export function toEntryView(row: EntryRow): OutboxEntryView {
  return {
    id: row.id,
    organization_id: row.organization_id,
    channel: row.channel,
    sender_id: row.sender_id,
    to: row.recipient,
    pacing_key: row.pacing_key,
    idempotency_key: row.idempotency_key,
    payload_type: row.payload_type,
    status: row.status,
    attempts: row.attempts,
    max_attempts: row.max_attempts,
    next_attempt_at: row.status === 'pending' ? new Date(row.next_attempt_at).toISOString() : null,
    provider_message_id: row.provider_message_id,
    last_error_code: row.last_error_code,
    last_classification: row.last_classification,
    last_error_message: row.last_error_message,
    log_context: row.log_context ?? {},
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
  };
}
