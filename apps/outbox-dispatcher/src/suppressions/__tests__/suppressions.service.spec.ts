import { FakeLogger, FakeTx, fakeOf, fakeUnitOfWork } from '@touchpoint/testing';
import { OutboxEvents, type OutboxSuppressionData } from '@touchpoint/contracts';
import type { Logger } from '@touchpoint/observability';
import type { UnitOfWork } from '@touchpoint/runtime';
import { FixedClock } from '@touchpoint/time';
import type { EntryRow } from '../../drain/outbox.repository.js';
import { SuppressionsRepository } from '../suppressions.repository.js';
import { SuppressionsService } from '../suppressions.service.js';

const NOW = new Date('2026-03-02T12:00:00Z');

/** An in-memory list and queue standing in for `contact_suppressions` and `message_outbox`. */
class FakeSuppressions {
  readonly listed = new Set<string>();
  /** Pending entries by `${org}|${channel}|${pacing key}`. */
  readonly pending = new Map<string, EntryRow[]>();
  readonly calls: string[] = [];

  repository(): SuppressionsRepository {
    return fakeOf<SuppressionsRepository>(
      {
        lockRecipient: async (_tx, _org, channel, value) => {
          this.calls.push(`lock ${channel} ${value}`);
        },
        add: async (_tx, org, channel, value) => {
          this.calls.push(`add ${channel} ${value}`);
          const key = `${org}|${channel}|${value}`;
          if (this.listed.has(key)) return false;
          this.listed.add(key);
          return true;
        },
        cancelPendingTo: async (_tx, org, channel, pacingKey) => {
          const key = `${org}|${channel}|${pacingKey}`;
          const rows = this.pending.get(key) ?? [];
          this.pending.delete(key);
          return rows;
        },
        page: async (_db, org, filter, limit) => {
          this.calls.push(`page ${org} ${filter.contains ?? '-'} ${filter.channel ?? '-'} ${limit}`);
          return [];
        },
        remove: async (_tx, org, channel, value, now) => (this.listed.delete(`${org}|${channel}|${value}`) ? { removed_at: now } : null),
      },
      'SuppressionsRepository',
    );
  }
}

function anEntry(org: string, channel: EntryRow['channel'], pacingKey: string, id: string): EntryRow {
  return {
    id,
    seq: '1',
    organization_id: org,
    channel,
    sender_id: 'sender-1',
    pair_id: 'pair-1',
    recipient: pacingKey,
    pacing_key: pacingKey,
    idempotency_key: `key-${id}`,
    payload_type: 'text',
    payload: { type: 'text', body: 'hello' },
    prepared: null,
    status: 'pending',
    attempts: 0,
    max_attempts: 5,
    next_attempt_at: NOW,
    claim_fence: null,
    claimed_at: null,
    log_context: {},
    requester: 'test',
    provider_message_id: null,
    evidence: null,
    last_classification: null,
    last_error_code: null,
    last_error_message: null,
    last_http_status: null,
    resolution: null,
    resolution_note: null,
    resolved_by: null,
    created_at: NOW,
    updated_at: NOW,
    settled_at: null,
  };
}

describe(SuppressionsService.name, () => {
  let store: FakeSuppressions;
  let tx: FakeTx;
  let logger: FakeLogger;
  let sut: SuppressionsService;

  beforeEach(() => {
    store = new FakeSuppressions();
    tx = new FakeTx();
    logger = new FakeLogger();
    sut = new SuppressionsService(fakeUnitOfWork(tx) as unknown as UnitOfWork, store.repository(), new FixedClock(NOW), logger as unknown as Logger);
  });

  const suppression = (over: Partial<OutboxSuppressionData>): OutboxSuppressionData => ({ organization_id: 'org-1', channel: 'email', value: 'sarah@acme.example', reason: 'unsubscribed', ...over }) as OutboxSuppressionData;

  describe('add', () => {
    it.each([
      ['an email, lower-cased and trimmed', 'email', '  Sarah.Lee@ACME.example ', 'sarah.lee@acme.example'],
      ['a WhatsApp number by its digits', 'whatsapp', '+55 11 91234-5678', '5511912345678'],
      ['a LinkedIn id, trimmed', 'linkedin', ' ACoAAB123 ', 'ACoAAB123'],
    ] as const)("keys %s, as the pre-wire gate looks it up, and takes that key's recipient lock before the row", async (_case, channel, value, key) => {
      const added = await sut.add(suppression({ channel, value }));
      expect(added).toEqual({ value: key, created: true, cancelled_entry_ids: [] });
      expect(store.calls).toEqual([`lock ${channel} ${key}`, `add ${channel} ${key}`]);
    });

    it('cancels every pending entry to the value with outbox.entry.cancelled reason suppressed, in the same transaction', async () => {
      store.pending.set('org-1|email|sarah@acme.example', [anEntry('org-1', 'email', 'sarah@acme.example', 'e1'), anEntry('org-1', 'email', 'sarah@acme.example', 'e2')]);
      const added = await sut.add(suppression({ value: 'Sarah@Acme.example' }));
      expect(added.cancelled_entry_ids).toEqual(['e1', 'e2']);
      expect(tx.published.map((m) => [m.event_id, m.type, (m.data as { reason?: string }).reason])).toEqual([
        [`${OutboxEvents.EntryCancelled}:e1`, OutboxEvents.EntryCancelled, 'suppressed'],
        [`${OutboxEvents.EntryCancelled}:e2`, OutboxEvents.EntryCancelled, 'suppressed'],
      ]);
      expect(logger.events()).toEqual(['outbox.suppression_added']);
    });

    it("leaves another organization's and another channel's entries alone", async () => {
      store.pending.set('org-2|email|sarah@acme.example', [anEntry('org-2', 'email', 'sarah@acme.example', 'other-org')]);
      store.pending.set('org-1|linkedin|sarah@acme.example', [anEntry('org-1', 'linkedin', 'sarah@acme.example', 'other-channel')]);
      expect((await sut.add(suppression({}))).cancelled_entry_ids).toEqual([]);
      expect(tx.published).toEqual([]);
    });

    it('is idempotent: a repeat adds nothing, cancels nothing and logs nothing', async () => {
      await sut.add(suppression({}));
      logger.lines.length = 0;
      expect(await sut.add(suppression({}))).toEqual({ value: 'sarah@acme.example', created: false, cancelled_entry_ids: [] });
      expect(tx.published).toEqual([]);
      expect(logger.lines).toEqual([]);
    });

    it("runs in the caller's transaction when given one (a bus handler's inbox transaction)", async () => {
      const inbox = new FakeTx();
      store.pending.set('org-1|email|sarah@acme.example', [anEntry('org-1', 'email', 'sarah@acme.example', 'e1')]);
      await sut.add(suppression({}), inbox);
      expect(inbox.published).toHaveLength(1);
      expect(tx.published).toEqual([]);
    });

    it.each([
      ['no organization', 'validation_failed', { organization_id: '' }],
      ['an unknown channel', 'validation_failed', { channel: 'fax' as OutboxSuppressionData['channel'] }],
      ['a blank email', 'invalid_recipient', { value: '  ' }],
      ['a phone number that is not one', 'invalid_recipient', { channel: 'whatsapp', value: 'not a number' }],
    ] as const)('refuses %s with %s and writes nothing', async (_case, code, over) => {
      await expect(sut.add(suppression(over as Partial<OutboxSuppressionData>))).rejects.toMatchObject({ code });
      expect(store.calls).toEqual([]);
    });
  });

  describe('list', () => {
    it.each([
      ['a phone number with its punctuation, as its digits', '+55 (11) 91234-5678', '5511912345678'],
      ['an email part, trimmed', '  Sarah@ ', 'Sarah@'],
      ['a note word', 'phone', 'phone'],
      ['nothing for a blank q', '   ', '-'],
    ])('searches %s', async (_case, q, contains) => {
      expect(await sut.list({ organization_id: 'org-1', q })).toEqual({ items: [], next_cursor: null });
      expect(store.calls).toEqual([`page org-1 ${contains} - 51`]);
    });

    it.each([
      ['no organization', 'validation_failed', { organization_id: '' }],
      ['a limit of 0', 'validation_failed', { limit: 0 }],
      ['a limit over 200', 'validation_failed', { limit: 201 }],
      ['an unknown channel', 'validation_failed', { channel: 'fax' }],
      ['a q over 320 characters', 'validation_failed', { q: 'x'.repeat(321) }],
      ['a cursor that is not ours', 'invalid_cursor', { cursor: 'bm90LW91cnM' }],
    ] as const)('refuses %s with %s', async (_case, code, over) => {
      await expect(sut.list({ organization_id: 'org-1', ...(over as object) })).rejects.toMatchObject({ code });
      expect(store.calls).toEqual([]);
    });
  });

  describe('remove', () => {
    it('keeps the trimmed note with the removal, and refuses a note over 1000 characters', async () => {
      await sut.add(suppression({}));
      expect(await sut.remove(suppression({ note: '  She asked to hear from us again ', actor: 'member:m1' }))).toEqual(expect.objectContaining({ removed: true, note: 'She asked to hear from us again' }));
      expect(logger.events()).toContain('outbox.suppression_removed');
      await expect(sut.remove(suppression({ note: 'x'.repeat(1001) }))).rejects.toMatchObject({ code: 'validation_failed' });
    });

    it('takes the value off the list, keyed like add', async () => {
      await sut.add(suppression({}));
      expect(await sut.remove(suppression({ value: 'SARAH@acme.example' }))).toEqual({ value: 'sarah@acme.example', channel: 'email', removed: true, note: null, removed_at: NOW.toISOString() });
      expect(store.listed.size).toBe(0);
    });

    it('says removed: false for a value that was not on the list', async () => {
      expect(await sut.remove(suppression({ value: 'never@acme.example' }))).toEqual({ value: 'never@acme.example', channel: 'email', removed: false, note: null, removed_at: null });
    });
  });
});
