import { randomUUID } from 'node:crypto';
import type { Page } from 'playwright-core';
import { type Answer, GatewayClient, SandboxClient } from '../../scripts/demo/http-clients.js';
import { Platform, type Tenant } from '../e2e/platform.js';
import { until } from '../safety/safety-world.js';
import { Browser, screenshot, seriousViolations } from './browser.js';

/** A draft in the review queue, the fields this file reads. */
interface Card {
  id: string;
  enrollment_id: string;
  draft: { subject?: string; body?: string };
  campaign: { campaign_id: string; status: string };
}

const EDIT_PREFIX = 'touchpoint.console.edit.';

function ok<T>(what: string, answer: Answer<T>, ...statuses: number[]): T {
  if (!statuses.includes(answer.status)) throw new Error(`${what}: HTTP ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
}

/**
 * The operator console in a real browser (issue 20) against the whole platform as `npm start`
 * runs it: the gateway serves the build at /console, a member signs in with their API key, and
 * every click goes through the real API to the real services; the sandbox's Nylas shows what went
 * out on the wire. Each page is checked by axe-core and saved as a screenshot (test-artifacts/console).
 */
describe('operator console (browser)', () => {
  let platform: Platform;
  let tenant: Tenant;
  let gateway: GatewayClient;
  let sandbox: SandboxClient;
  let browser: Browser;
  let page: Page;
  let console_: string;
  const grant = `console-${randomUUID().slice(0, 8)}`;
  const campaigns = { main: '', paused: '' };
  const people: Record<'approve' | 'regenerate' | 'history' | 'paused', { contactId: string; email: string; enrollmentId: string }> = {} as never;

  const queue = async (): Promise<{ items: Card[]; total: number }> => ok('GET /agentic/outreach/actions', await gateway.get('/agentic/outreach/actions?limit=200'), 200);
  const cardOf = async (enrollmentId: string, timeoutMs = 120_000): Promise<Card> => {
    const card = await until(async () => (await queue()).items.find((c) => c.enrollment_id === enrollmentId), timeoutMs);
    if (!card) throw new Error(`no draft for enrollment ${enrollmentId} reached the review queue`);
    return card;
  };
  const cardLocator = (actionId: string) => page.locator(`article[data-action-id="${actionId}"]`);
  const expectAccessible = async (name: string) => {
    expect({ page: name, violations: await seriousViolations(page) }).toEqual({ page: name, violations: [] });
    await screenshot(page, name);
  };

  beforeAll(async () => {
    browser = await Browser.launch();
    page = await browser.page();
    platform = await Platform.start('console');
    tenant = await platform.tenant('Console Org');
    gateway = new GatewayClient(platform.url('gateway'), tenant.secret);
    sandbox = new SandboxClient(platform.url('sandbox'));
    console_ = `${platform.url('gateway')}/console/`;
    ok('sandbox nylas grant', await sandbox.request('POST', '/sandbox/nylas/grants', { grant_id: grant, api_key: 'sandbox-nylas-api-key', email: 'sales@console.example', provider: 'google' }), 200, 201);
    const mailbox = ok('POST /senders/accounts', await gateway.post('/senders/accounts', { channel: 'email', account_id: grant, address: 'sales@console.example', api_key: 'sandbox-nylas-api-key', provider: 'google', label: 'Console mailbox' }), 200, 201).id;
    const campaign = async (name: string) =>
      ok('campaign', await gateway.post('/agentic/outreach/campaigns', { name, goal: 'Book a 20-minute call', allowed_channels: ['email'], max_touches: 3, followup_min_days: 2, followup_max_days: 5, email_sender_id: mailbox }), 201).id as string;
    campaigns.main = await campaign('Operations leads');
    campaigns.paused = await campaign('Paused later');
    const names = { approve: 'Ana Souza', regenerate: 'Bruno Lima', history: 'Carla Dias', paused: 'Davi Rocha' } as const;
    for (const [role, name] of Object.entries(names) as Array<[keyof typeof names, string]>) {
      const email = `${role}.${randomUUID().slice(0, 6)}@prospect.example`;
      const contact = ok('POST /contacts', await gateway.post('/contacts', { kind: 'crm', name, email, custom_fields: { company: `${name.split(' ')[1]} Logistics` } }), 200, 201);
      const enrolled = ok('enroll', await gateway.post(`/agentic/outreach/campaigns/${role === 'paused' ? campaigns.paused : campaigns.main}/enrollments`, { person_kind: 'crm', person_id: contact.id }), 201);
      people[role] = { contactId: contact.id, email, enrollmentId: enrolled.id };
    }
    // All four drafts are written in parallel by the sandbox model; the tests start once they wait.
    const drafted = await until(async () => {
      const { items } = await queue();
      return Object.values(people).every((p) => items.some((c) => c.enrollment_id === p.enrollmentId));
    }, 240_000);
    if (!drafted) {
      const states = await Promise.all(Object.values(people).map(async (p) => JSON.stringify((await gateway.get(`/agentic/outreach/enrollments/${p.enrollmentId}/timeline`)).body?.items?.map((i: { kind: string; data: unknown }) => [i.kind, i.data]))));
      throw new Error(`not every draft reached the review queue in 240 s; timelines: ${states.join(' | ').slice(0, 3000)}`);
    }
  }, 600_000);

  afterAll(async () => {
    await browser?.close();
    await platform?.stop();
  }, 120_000);

  it('signs in with the API key, which no page script can read afterwards, and the session cookie is HttpOnly', async () => {
    await page.goto(console_);
    await page.getByLabel('Your API key').waitFor();
    await expectAccessible('sign-in');
    await page.getByLabel('Your API key').fill(tenant.secret);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('heading', { name: 'Review queue' }).waitFor();
    const seen = await page.evaluate(() => ({ cookie: document.cookie, local: JSON.stringify({ ...window.localStorage }), session: JSON.stringify({ ...window.sessionStorage }) }));
    expect(seen.cookie).not.toContain('tp_session');
    expect(seen.local).not.toContain(tenant.secret);
    expect(seen.session).not.toContain(tenant.secret);
    const cookies = await browser.context.cookies();
    expect(cookies.find((c) => c.name === 'tp_session')).toEqual(expect.objectContaining({ httpOnly: true, sameSite: 'Strict' }));
  });

  it('the nav badge shows the queue total, and the queue shows every pending draft oldest first', async () => {
    const { items, total } = await queue();
    expect(total).toBe(4);
    await page.getByTestId('queue-badge').filter({ hasText: /^4$/ }).waitFor({ timeout: 15_000 });
    // The badge and the queue are two reads: wait for the cards before reading their order.
    await page
      .locator('article[data-action-id]')
      .nth(items.length - 1)
      .waitFor();
    const shown = await page.locator('article[data-action-id]').evaluateAll((cards) => cards.map((c) => c.getAttribute('data-action-id')));
    expect(shown).toEqual(items.map((c) => c.id));
    await expectAccessible('review');
  });

  it('approves a draft with an edit: the edit survives a reload, the edited email reaches the sandbox, the stored edit and the card are gone, the badge counts down', async () => {
    const card = await cardOf(people.approve.enrollmentId);
    const edited = `Hi Ana, edited in the console ${randomUUID().slice(0, 8)}: would Tuesday at 10:00 work for a 20-minute call?`;
    const body = cardLocator(card.id).getByLabel('Body');
    await body.fill(edited);
    await cardLocator(card.id).getByTestId('edited-mark').waitFor();
    await page.reload();
    await expect(cardLocator(card.id).getByLabel('Body').inputValue()).resolves.toBe(edited);
    await cardLocator(card.id).getByTestId('edited-mark').waitFor();
    await expect(page.evaluate((key) => window.localStorage.getItem(key), EDIT_PREFIX + card.id)).resolves.toContain('edited in the console');

    await cardLocator(card.id).getByRole('button', { name: 'Approve' }).click();
    await cardLocator(card.id).waitFor({ state: 'detached' });
    await expect(page.evaluate((key) => window.localStorage.getItem(key), EDIT_PREFIX + card.id)).resolves.toBeNull();
    const sent = await until(async () => (await sandbox.received('nylas')).find((c) => c.context.grant_id === grant && JSON.stringify(c.body).includes(people.approve.email)), 90_000);
    expect(JSON.stringify(sent?.body)).toContain(edited);
    const timeline = ok('timeline', await gateway.get(`/agentic/outreach/enrollments/${people.approve.enrollmentId}/timeline`), 200).items as Array<{ id: string; kind: string; data: { approved_payload?: { body?: string } } }>;
    expect(timeline.find((i) => i.id === card.id)?.data.approved_payload?.body).toBe(edited);
    await page.getByTestId('queue-badge').filter({ hasText: /^3$/ }).waitFor({ timeout: 15_000 });
  }, 150_000);

  it('Reset to draft puts the written draft back and forgets the edit', async () => {
    const card = await cardOf(people.history.enrollmentId);
    await cardLocator(card.id).getByLabel('Body').fill('A different text');
    await cardLocator(card.id).getByRole('button', { name: 'Reset to draft' }).click();
    await expect(cardLocator(card.id).getByLabel('Body').inputValue()).resolves.toBe(card.draft.body);
    await expect(cardLocator(card.id).getByTestId('edited-mark').count()).resolves.toBe(0);
    await expect(page.evaluate((key) => window.localStorage.getItem(key), EDIT_PREFIX + card.id)).resolves.toBeNull();
  });

  it('an edit that fails the draft check shows its code and stays unsent', async () => {
    const card = await cardOf(people.history.enrollmentId);
    await cardLocator(card.id).getByLabel('Body').fill('Hi [First name], shall we talk?');
    await cardLocator(card.id).getByRole('button', { name: 'Approve' }).click();
    await expect(cardLocator(card.id).getByTestId('card-error').textContent()).resolves.toContain('draft_placeholder');
    expect((await queue()).items.map((c) => c.id)).toContain(card.id);
    await cardLocator(card.id).getByRole('button', { name: 'Reset to draft' }).click();
  });

  it('when the gateway cannot be reached, Approve and Refresh show network_error and the buttons work again', async () => {
    const card = await cardOf(people.history.enrollmentId);
    await cardLocator(card.id).waitFor();
    const approve = cardLocator(card.id).getByRole('button', { name: 'Approve' });
    await page.route('**/agentic/**', (route) => route.abort());
    try {
      await approve.click();
      await expect(cardLocator(card.id).getByTestId('card-error').textContent()).resolves.toContain('network_error');
      await expect(cardLocator(card.id).getByTestId('card-error').textContent()).resolves.toContain('The gateway could not be reached');
      await expect(approve.isEnabled()).resolves.toBe(true);
      await page.getByRole('button', { name: 'Refresh' }).click();
      await page.locator('main > section > p[role="alert"]').filter({ hasText: 'The gateway could not be reached' }).waitFor();
      await expect(page.getByRole('button', { name: 'Refresh' }).isEnabled()).resolves.toBe(true);
    } finally {
      await page.unroute('**/agentic/**');
    }
    // Nothing was approved; with the gateway back, Refresh clears the page's error.
    expect((await queue()).items.map((c) => c.id)).toContain(card.id);
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page.locator('main > section > p[role="alert"]').waitFor({ state: 'detached' });
  });

  it('rejects with regenerate: the draft leaves the queue and a new one for the same person arrives', async () => {
    const card = await cardOf(people.regenerate.enrollmentId);
    await cardLocator(card.id).getByRole('button', { name: 'Reject ▾' }).click();
    await cardLocator(card.id).getByRole('button', { name: 'Regenerate…' }).click();
    await cardLocator(card.id).getByLabel('What should the new draft do differently?').fill('Shorter, and mention the free trial');
    // No model script: the sandbox model itself answers draft_rejected with a new email that cites the reason.
    await cardLocator(card.id).getByRole('button', { name: 'Ask for a new draft' }).click();
    await cardLocator(card.id).waitFor({ state: 'detached' });
    const timeline = ok('timeline', await gateway.get(`/agentic/outreach/enrollments/${people.regenerate.enrollmentId}/timeline`), 200).items as Array<{ id: string; data: { status?: string; reject_reason?: string } }>;
    expect(timeline.find((i) => i.id === card.id)?.data).toEqual(expect.objectContaining({ status: 'rejected', reject_reason: 'Shorter, and mention the free trial' }));
    const fresh = await until(async () => (await queue()).items.find((c) => c.enrollment_id === people.regenerate.enrollmentId && c.id !== card.id), 120_000);
    expect(fresh).toBeDefined();
    const after = ok('timeline', await gateway.get(`/agentic/outreach/enrollments/${people.regenerate.enrollmentId}/timeline`), 200).items as Array<{ kind: string; data: { trigger_reason?: string; type?: string; rationale?: string } }>;
    expect(after.find((i) => i.kind === 'decision' && i.data.trigger_reason === 'draft_rejected')?.data).toEqual(expect.objectContaining({ type: 'email', rationale: expect.stringContaining('Shorter, and mention the free trial') }));
    await page.getByRole('button', { name: 'Refresh' }).click();
    await cardLocator(fresh!.id).waitFor();
  }, 150_000);

  it('pauses a campaign from the campaigns page, and its draft cannot be approved while it is paused', async () => {
    await page.getByRole('link', { name: 'Campaigns' }).click();
    await page.getByRole('heading', { name: 'Campaigns' }).waitFor();
    await expectAccessible('campaigns');
    await page.getByRole('button', { name: 'Pause Paused later' }).click();
    await page.getByRole('button', { name: 'Resume Paused later' }).waitFor();
    expect(ok('campaign', await gateway.get(`/agentic/outreach/campaigns/${campaigns.paused}`), 200).status).toBe('paused');
    const card = await cardOf(people.paused.enrollmentId);
    await page.getByRole('link', { name: /^Review/ }).click();
    await cardLocator(card.id).waitFor();
    await expect(cardLocator(card.id).getByRole('button', { name: 'Approve' }).isDisabled()).resolves.toBe(true);
    await expect(cardLocator(card.id).textContent()).resolves.toContain('The campaign is paused');
    // The draft of an active campaign is still approvable.
    const active = await cardOf(people.history.enrollmentId);
    await expect(cardLocator(active.id).getByRole('button', { name: 'Approve' }).isDisabled()).resolves.toBe(false);
  });

  it("the enrollment drawer, opened from a card, shows the person's reply to the sent email", async () => {
    const sent = (await sandbox.received('nylas')).find((c) => c.context.grant_id === grant && JSON.stringify(c.body).includes(people.approve.email));
    const reply = `Thanks! Tuesday works, what does the plan cost? ${randomUUID().slice(0, 6)}`;
    ok('sandbox inbound', await sandbox.request('POST', '/sandbox/nylas/inbound', { grant_id: grant, from: people.approve.email, from_name: 'Ana Souza', body: reply, ...(sent?.provider_id ? { reply_to_message_id: sent.provider_id } : {}) }), 200, 201, 202);
    await until(async () => ((await gateway.get(`/agentic/outreach/enrollments/${people.approve.enrollmentId}/timeline`)).body?.items as Array<{ kind: string; data: { direction?: string } }>).some((i) => i.kind === 'email' && i.data.direction === 'inbound'), 90_000);

    // From a campaign's enrollment list.
    await page.goto(`${console_}campaigns/${campaigns.main}`);
    await page.getByRole('heading', { name: 'Operations leads' }).waitFor();
    await expectAccessible('campaign');
    await page.getByRole('button', { name: 'Open history of Ana Souza' }).click();
    const drawer = page.getByRole('dialog');
    // The reply is an email card of its own; the decision it started quotes it in its rationale too.
    const replyCard = drawer.locator('[data-kind="email"]').filter({ hasText: reply });
    await replyCard.waitFor({ timeout: 15_000 });
    await expect(replyCard.textContent()).resolves.toContain('inbound');
    await expect(drawer.locator('[data-kind="email"]').count()).resolves.toBeGreaterThanOrEqual(2);
    await drawer.getByRole('radio', { name: 'This enrollment' }).check();
    await replyCard.waitFor();
    await expectAccessible('enrollment-drawer');
    await drawer.getByRole('button', { name: 'Close' }).click();
    await drawer.waitFor({ state: 'detached' });
    expect(new URL(page.url()).searchParams.get('enrollment')).toBeNull();

    // From a review card.
    await page.getByRole('link', { name: /^Review/ }).click();
    const card = await cardOf(people.history.enrollmentId);
    await cardLocator(card.id).getByRole('button', { name: 'History' }).click();
    await page.getByRole('dialog').locator('[data-kind="action"]').first().waitFor();
    await expect(page.getByRole('dialog').locator('[data-kind="enrolled"]').count()).resolves.toBe(1);
    // Escape closes it too, and leaves the page usable for the tests after this one.
    await page.keyboard.press('Escape');
    await page.getByRole('dialog').waitFor({ state: 'detached' });
    await cardLocator(card.id).getByRole('button', { name: 'Approve' }).waitFor();
  }, 150_000);

  it('an ambiguous send is settled from the operations page, with its note', async () => {
    // The provider takes the email and drops the connection: the outcome is unknown, never retried.
    ok('sandbox fault', await sandbox.request('POST', '/sandbox/control/nylas/faults', { faults: [{ kind: 'drop', deliver: true, match: { to: people.history.email } }] }), 200, 201);
    const card = await cardOf(people.history.enrollmentId);
    await page.getByRole('link', { name: /^Review/ }).click();
    await cardLocator(card.id).getByRole('button', { name: 'Approve' }).click();
    await cardLocator(card.id).waitFor({ state: 'detached' });
    const entry = await until(async () => (ok('ambiguous', await gateway.get('/outbox/ambiguous'), 200).items as Array<{ id: string; to: string }>).find((e) => e.to === people.history.email), 90_000);
    expect(entry).toBeDefined();

    await page.getByRole('link', { name: 'Ambiguous sends' }).click();
    const row = page.locator(`article[data-entry-id="${entry!.id}"]`);
    await row.waitFor();
    await expectAccessible('ambiguous-sends');
    await row.getByRole('radio', { name: /Yes, it arrived/ }).check();
    await row.getByLabel('Note (how you know)').fill('Carla confirmed by phone that the email arrived');
    await row.getByRole('button', { name: 'Resolve' }).click();
    await row.waitFor({ state: 'detached' });
    expect((ok('ambiguous', await gateway.get('/outbox/ambiguous'), 200).items as Array<{ id: string }>).map((e) => e.id)).not.toContain(entry!.id);

    await page.getByRole('link', { name: 'Services' }).click();
    await page.getByRole('cell', { name: 'outreach' }).waitFor();
    await expectAccessible('services');

    await page.getByRole('link', { name: 'Queue', exact: true }).click();
    await page.getByRole('heading', { name: 'Follow-up queue' }).waitFor();
    await page.getByText('Nothing is scheduled.').waitFor();
    await expectAccessible('followups-queue');
  }, 150_000);

  it('the do-not-contact list: an address added from the page is found by search and removed with a note', async () => {
    const address = `dnc.${randomUUID().slice(0, 8)}@prospect.example`;
    const note = 'She wrote back asking to hear about the offer';
    const listed = async () => ok('GET /suppressions', await gateway.get(`/suppressions?q=${encodeURIComponent(address)}`), 200).items as Array<{ id: string; channel: string; value: string; reason: string; note: string | null }>;
    await page.getByRole('link', { name: 'Do not contact' }).click();
    await page.getByRole('heading', { name: 'Do not contact' }).waitFor();
    await page.getByLabel('Channel', { exact: true }).selectOption('email');
    await page.getByLabel('Address (email, phone number or LinkedIn id)').fill(address.toUpperCase());
    await page.getByLabel('Note (optional: why)').fill('Asked on the phone not to be emailed');
    await page.getByRole('button', { name: 'Add to the list' }).click();
    await page.getByText(`${address} is on the list.`).waitFor();
    const [added] = await listed();
    expect(added).toEqual(expect.objectContaining({ channel: 'email', value: address, reason: 'manual', note: 'Asked on the phone not to be emailed' }));

    await page.getByLabel('Search addresses and notes').fill(address.split('@')[0]!.toUpperCase());
    await page.getByRole('button', { name: 'Search', exact: true }).click();
    const rows = page.locator('tr[data-suppression-id]');
    await until(async () => (await rows.count()) === 1 || undefined, 15_000);
    await expect(rows.getAttribute('data-suppression-id')).resolves.toBe(added!.id);
    await expectAccessible('do-not-contact');

    const row = page.locator(`tr[data-suppression-id="${added!.id}"]`);
    await row.getByRole('button', { name: `Remove ${address}` }).click();
    await page.getByLabel(`Why may ${address} be contacted again?`).fill(note);
    const answer = page.waitForResponse((r) => new URL(r.url()).pathname === '/suppressions' && r.request().method() === 'DELETE');
    await page.getByRole('button', { name: 'Remove from the list' }).click();
    const removed = await answer;
    expect({ status: removed.status(), body: await removed.json() }).toEqual({ status: 200, body: expect.objectContaining({ removed: true, channel: 'email', value: address, note }) });
    await row.waitFor({ state: 'detached' });
    await page.getByText(`${address} may be contacted again on Email.`).waitFor();
    await expect(listed()).resolves.toEqual([]);
  });

  it('sign-out ends the session: the API refuses the old cookie and the page asks for the key again', async () => {
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Your API key').waitFor();
    await page.reload();
    await page.getByLabel('Your API key').waitFor();
    const status = await page.evaluate(async () => (await fetch('/agentic/outreach/actions')).status);
    expect(status).toBe(401);
  });

  it('a session that ends mid-use (401) drops to the sign-in page with a notice saying so', async () => {
    await page.getByLabel('Your API key').fill(tenant.secret);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('link', { name: /^Review/ }).click();
    await page.getByRole('heading', { name: 'Review queue' }).waitFor();
    // The cookie gone is what the gateway sees of a revoked or expired session: the next call answers 401.
    await browser.context.clearCookies();
    await page.getByRole('button', { name: 'Refresh' }).click();
    await page.getByLabel('Your API key').waitFor();
    await expect(page.getByRole('alert').textContent()).resolves.toBe('Your session ended; sign in again.');
  });
});
