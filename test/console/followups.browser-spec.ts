import { randomUUID } from 'node:crypto';
import type { Page } from 'playwright-core';
import { type Answer, GatewayClient } from '../../scripts/demo/http-clients.js';
import { Platform, type Tenant } from '../e2e/platform.js';
import { until } from '../safety/safety-world.js';
import { Browser, screenshot, seriousViolations } from './browser.js';

/** The fields of a flow version this file reads. */
interface Version {
  id: string;
  version: number;
  source_version_id: string | null;
}

function ok<T>(what: string, answer: Answer<T>, ...statuses: number[]): T {
  if (!statuses.includes(answer.status)) throw new Error(`${what}: HTTP ${answer.status} ${JSON.stringify(answer.body)}`);
  return answer.body;
}

const TEMPLATE = { name: 'retomada_conversa', language: 'pt_BR' };
/** Every hour of every day, in UTC: a send is never deferred to the window's opening. */
const ALWAYS_OPEN = { send_start_hour: 0, send_end_hour: 24, send_days: [1, 2, 3, 4, 5, 6, 7], timezone: 'UTC' };
const SETTINGS = { trigger: { kind: 'manual', cancel_on_reply: true }, handoff_policy: 'pause', ...ALWAYS_OPEN };

type Node = { id: string; type: string; label?: string; config: Record<string, unknown> };
const node = (id: string, type: string, label: string, config: Record<string, unknown> = {}): Node => ({ id, type, label, config });
const always = (id: string, source: string, target: string) => ({ id, source, target, condition: { type: 'always' } });

/** trigger → template send → end; `template` names the send's template. */
function graphOf(template: string, extra: Node[] = []) {
  return {
    nodes: [node('inicio', 'trigger', 'Início'), node('lembrete', 'action', 'Lembrete', { mode: 'template', template: { name: template, language: TEMPLATE.language, parameters: [] } }), node('fim', 'end', 'Fim', { outcome: 'exhausted' }), ...extra],
    edges: [always('e1', 'inicio', 'lembrete'), always('e2', 'lembrete', 'fim')],
  };
}

/**
 * The console's follow-up pages in a real browser (issue 20 item 5) against the whole platform:
 * the flows list, a flow's draft whose refused publish shows each problem on the node it names,
 * the fixed draft published, versions and a rollback, an enrollment's events and effects, and the
 * sends awaiting a decision: an admin approves one from the page; an operator's key is refused by
 * the API, the page says so, and the send keeps waiting. Every page is checked by axe-core and
 * saved as a screenshot (test-artifacts/console/followups-*.png).
 */
describe('operator console: follow-ups (browser)', () => {
  let platform: Platform;
  let tenant: Tenant;
  let operatorSecret: string;
  let gateway: GatewayClient;
  let browser: Browser;
  let page: Page;
  let console_: string;
  let draftFlowId: string;
  let approvalFlowId: string;
  const waiting: Array<{ enrollmentId: string; effectId: string }> = [];

  const org = () => tenant.organizationId;
  const versionsOf = async (flowId: string): Promise<Version[]> => ok('versions', await gateway.get(`/ai/followup-flows/${flowId}/versions?customer_id=${org()}`), 200).data;
  const flowOf = async (flowId: string) => ok('flow', await gateway.get(`/ai/followup-flows/${flowId}?customer_id=${org()}`), 200).data as { published_version_id: string | null; revision: number; status: string };
  const awaiting = async (): Promise<Array<{ id: string; enrollment_id: string }>> => ok('effects', await gateway.get(`/ai/followups/effects?customer_id=${org()}&status=awaiting_decision&limit=100`), 200).data.data;
  const effectOf = async (enrollmentId: string, effectId: string) => {
    const detail = ok('enrollment', await gateway.get(`/ai/followups/enrollments/${enrollmentId}?customer_id=${org()}`), 200).data as { effects: Array<{ id: string; status: string; decided_at: string | null }> };
    return detail.effects.find((e) => e.id === effectId);
  };
  const nodeCard = (id: string) => page.locator(`article[data-node-id="${id}"]`);
  const versionRow = (id: string) => page.locator(`tr[data-version-id="${id}"]`);
  const expectAccessible = async (name: string) => {
    expect({ page: name, violations: await seriousViolations(page) }).toEqual({ page: name, violations: [] });
    await screenshot(page, name);
  };
  const signIn = async (secret: string) => {
    await page.getByLabel('Your API key').fill(secret);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('button', { name: 'Sign out' }).waitFor();
  };

  beforeAll(async () => {
    browser = await Browser.launch();
    page = await browser.page();
    platform = await Platform.start('console_fu');
    tenant = await platform.tenant('Follow-ups Console Org');
    gateway = new GatewayClient(platform.url('gateway'), tenant.secret);
    console_ = `${platform.url('gateway')}/console/`;
    // An operator and their key: members and their keys are made with the admin CLI (the HTTP API
    // makes keys for the calling key's own creator only).
    const operator = await platform.cli.run<{ id: string }>(['member:add', '--org', org(), '--email', `operator@${org().slice(0, 8)}.test`, '--role', 'operator', '--name', 'Operator']);
    operatorSecret = (await platform.cli.run<{ secret: string }>(['apikey:create', '--org', org(), '--member', operator.id, '--scopes', 'agents:read,agents:write', '--name', 'operator console'])).secret;

    ok('settings', await gateway.put('/ai/followups/settings', { customer_id: org(), expected_revision: 0, approved_templates: [{ ...TEMPLATE, parameter_count: 0 }] }), 200);
    draftFlowId = ok('draft flow', await gateway.post('/ai/followup-flows', { customer_id: org(), name: 'Retomada em rascunho', graph: graphOf('modelo_inexistente', [node('sobra', 'end', 'Sobra')]), settings: SETTINGS }), 201).data.id;

    // A flow that asks a person before every send, active, with two contacts enrolled.
    const created = ok('approval flow', await gateway.post('/ai/followup-flows', { customer_id: org(), name: 'Pós-venda com aprovação', graph: graphOf(TEMPLATE.name), settings: { ...SETTINGS, require_approval: true } }), 201).data;
    approvalFlowId = created.id;
    const published = ok('publish', await gateway.post(`/ai/followup-flows/${approvalFlowId}/publish`, { customer_id: org(), expected_revision: created.revision }), 200).data;
    ok('activate', await gateway.patch(`/ai/followup-flows/${approvalFlowId}`, { customer_id: org(), expected_revision: published.revision, status: 'active' }), 200);
    for (const [i, name] of ['Ana Souza', 'Bruno Lima'].entries()) {
      const contact = ok('contact', await gateway.post('/contacts', { kind: 'crm', name, phone: `+55119876500${10 + i}` }), 200, 201);
      const enrollment = ok('enroll', await gateway.post('/ai/followups/enrollments', { customer_id: org(), flow_id: approvalFlowId, contact_id: contact.id, operation_key: randomUUID() }), 201).data;
      const effect = await until(async () => (await awaiting()).find((e) => e.enrollment_id === enrollment.id), 90_000);
      if (!effect) throw new Error(`the send of enrollment ${enrollment.id} never came to wait for a decision`);
      waiting.push({ enrollmentId: enrollment.id, effectId: effect.id });
    }
  }, 600_000);

  afterAll(async () => {
    await browser?.close();
    await platform?.stop();
  }, 120_000);

  it('an admin signs in; the Follow-ups nav lists the flows and the sends awaiting a decision', async () => {
    await page.goto(console_);
    await page.getByLabel('Your API key').waitFor();
    await signIn(tenant.secret);
    const nav = page.getByRole('navigation', { name: 'Main' });
    await nav.getByRole('link', { name: 'Flows' }).waitFor();
    await nav.getByRole('link', { name: 'Awaiting decision' }).waitFor();
  });

  it('the flows list shows each flow with its status, published version and number of versions', async () => {
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Flows' }).click();
    await page.getByRole('heading', { name: 'Flows', level: 1 }).waitFor();
    const draft = page.locator(`tr[data-flow-id="${draftFlowId}"]`);
    const active = page.locator(`tr[data-flow-id="${approvalFlowId}"]`);
    await active.getByRole('cell', { name: 'v1' }).waitFor();
    await expect(draft.locator('td').allInnerTexts()).resolves.toEqual(['Retomada em rascunho', 'draft', 'none', '0', expect.any(String)]);
    await expect(active.locator('td').allInnerTexts()).resolves.toEqual(['Pós-venda com aprovação', 'active', 'v1', '1', expect.any(String)]);
    await expectAccessible('followups-flows');
  });

  it('a refused publish shows each invalid_graph problem on the node it names, and publishes nothing', async () => {
    await page.getByRole('link', { name: 'Retomada em rascunho' }).click();
    await page.getByRole('heading', { name: 'Retomada em rascunho' }).waitFor();
    await expect(page.locator('article[data-node-id]').evaluateAll((cards) => cards.map((c) => c.getAttribute('data-node-id')))).resolves.toEqual(['inicio', 'lembrete', 'fim', 'sobra']);
    await page.getByRole('button', { name: 'Publish draft' }).click();
    await page.getByRole('alert').filter({ hasText: 'invalid_graph' }).waitFor();
    await nodeCard('lembrete').getByRole('list', { name: 'Problems of node Lembrete' }).getByText('unknown_template').waitFor();
    await expect(nodeCard('lembrete').getByRole('list', { name: 'Problems of node Lembrete' }).innerText()).resolves.toContain('modelo_inexistente');
    await nodeCard('sobra').getByRole('list', { name: 'Problems of node Sobra' }).getByText('unreachable_node').waitFor();
    // Problems stay on their own nodes.
    await expect(nodeCard('inicio').getByRole('list').count()).resolves.toBe(0);
    await expect(nodeCard('lembrete').getByText('unreachable_node').count()).resolves.toBe(0);
    expect(await versionsOf(draftFlowId)).toEqual([]);
    await expectAccessible('followups-flow-invalid');
    // Nothing published: the API refuses to activate it, and the page says so.
    await page.getByRole('button', { name: 'Activate' }).click();
    await page.getByRole('alert').filter({ hasText: 'publish_required' }).waitFor();
    expect((await flowOf(draftFlowId)).status).toBe('draft');
  });

  it('the draft fixed on the page publishes as version 1, listed as current, and the flow is then activated', async () => {
    await page.getByText('Edit the draft as JSON').click();
    await page.getByLabel('Draft graph (JSON)').fill(JSON.stringify(graphOf(TEMPLATE.name), null, 2));
    await page.getByRole('button', { name: 'Save draft' }).click();
    await page.getByText('The draft is saved.').waitFor();
    await expect(page.locator('article[data-node-id]').count()).resolves.toBe(3);
    await page.getByRole('button', { name: 'Publish draft' }).click();
    await page.getByText('The draft is published as a new version.').waitFor();
    const [v1] = await versionsOf(draftFlowId);
    expect(v1).toMatchObject({ version: 1, source_version_id: null });
    await versionRow(v1!.id).getByText('current').waitFor();
    await expect(page.getByRole('alert').count()).resolves.toBe(0);
    await expect(page.locator('.node-invalid').count()).resolves.toBe(0);
    expect((await flowOf(draftFlowId)).published_version_id).toBe(v1!.id);
    await page.getByRole('button', { name: 'Activate' }).click();
    await page.getByText('The flow is active.').waitFor();
    await page.getByRole('button', { name: 'Pause' }).waitFor();
    expect((await flowOf(draftFlowId)).status).toBe('active');
  });

  it('rolls back to an earlier version: it is published again as a new version that names its source', async () => {
    const edited = graphOf(TEMPLATE.name);
    edited.nodes[1]!.label = 'Lembrete revisto';
    await page.getByText('Edit the draft as JSON').click();
    await page.getByLabel('Draft graph (JSON)').fill(JSON.stringify(edited));
    await page.getByRole('button', { name: 'Save draft' }).click();
    await page.getByText('The draft is saved.').waitFor();
    await page.getByRole('button', { name: 'Publish draft' }).click();
    await page.getByText('The draft is published as a new version.').waitFor();
    const [v2, v1] = await versionsOf(draftFlowId);
    expect([v2?.version, v1?.version]).toEqual([2, 1]);
    await versionRow(v2!.id).getByText('current').waitFor();

    await versionRow(v1!.id).getByRole('button', { name: 'Roll back to v1' }).click();
    await page.getByText('Version 1 is published again.').waitFor();
    const versions = await versionsOf(draftFlowId);
    expect(versions.map((v) => [v.version, v.source_version_id])).toEqual([
      [3, v1!.id],
      [2, null],
      [1, null],
    ]);
    expect((await flowOf(draftFlowId)).published_version_id).toBe(versions[0]!.id);
    await versionRow(versions[0]!.id).getByText('current').waitFor();
    await versionRow(versions[0]!.id).getByRole('cell', { name: 'rollback to v1' }).waitFor();
    await versionRow(v2!.id).getByRole('button', { name: 'Roll back to v2' }).waitFor();
    // The draft is the version rolled back to.
    await nodeCard('lembrete')
      .getByRole('heading', { name: /^Lembrete \(action\)$/ })
      .waitFor();
    await expectAccessible('followups-flow-versions');
  });

  it("an enrollment's page shows its events and its effects", async () => {
    const { enrollmentId, effectId } = waiting[0]!;
    await page.goto(`${console_}followups/enrollments/${enrollmentId}`);
    await page.getByRole('heading', { name: /^Enrollment of contact/ }).waitFor();
    const effect = page.getByRole('table', { name: 'Effects' }).locator(`tr[data-effect-id="${effectId}"]`);
    await effect.waitFor();
    await expect(effect.locator('td').allInnerTexts()).resolves.toEqual(['lembrete', 'send', 'awaiting_decision decide', `template ${TEMPLATE.name} (${TEMPLATE.language})`, '—', '—', expect.any(String)]);
    const events = await page.getByRole('table', { name: 'Events' }).locator('tbody tr td:first-child').allInnerTexts();
    const api = ok('enrollment', await gateway.get(`/ai/followups/enrollments/${enrollmentId}?customer_id=${org()}`), 200).data as { events: Array<{ type: string }> };
    expect(events).toEqual(api.events.map((e) => e.type));
    expect(events).toContain('awaiting_decision');
    await page.getByRole('link', { name: 'Pós-venda com aprovação' }).waitFor();
    await expectAccessible('followups-enrollment');
  });

  it('an admin approves a send awaiting a decision from the page; it leaves the list and the API has it approved', async () => {
    const { enrollmentId, effectId } = waiting[0]!;
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Awaiting decision' }).click();
    await page.getByRole('heading', { name: 'Sends awaiting a decision' }).waitFor();
    const card = page.locator(`article[data-effect-id="${effectId}"]`);
    await card.getByText(`template ${TEMPLATE.name} (${TEMPLATE.language})`).waitFor();
    await page.locator(`article[data-effect-id="${waiting[1]!.effectId}"]`).waitFor();
    await expectAccessible('followups-approvals');
    await card.getByRole('button', { name: /^Approve the send to / }).click();
    await card.waitFor({ state: 'detached' });
    await page.getByText(/^The send to .+ is approved\.$/).waitFor();
    const effect = await effectOf(enrollmentId, effectId);
    expect(effect?.status).not.toBe('awaiting_decision');
    expect(effect?.decided_at).toEqual(expect.any(String));
    expect((await awaiting()).map((e) => e.id)).toEqual([waiting[1]!.effectId]);
  });

  it('an operator sees the waiting send, but the API refuses their approval (403): the page shows the refusal and the send keeps waiting', async () => {
    const { enrollmentId, effectId } = waiting[1]!;
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByLabel('Your API key').waitFor();
    await signIn(operatorSecret);
    await expect(page.getByText('(operator)').count()).resolves.toBe(1);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Awaiting decision' }).click();
    const card = page.locator(`article[data-effect-id="${effectId}"]`);
    await card.waitFor();
    await card.getByRole('button', { name: /^Approve the send to / }).click();
    const refusal = card.getByRole('alert');
    await refusal.getByText('forbidden').waitFor();
    await expect(refusal.innerText()).resolves.toContain('admin');
    await expect(card.isVisible()).resolves.toBe(true);
    await expectAccessible('followups-approvals-operator');
    expect((await effectOf(enrollmentId, effectId))?.status).toBe('awaiting_decision');
    expect((await awaiting()).map((e) => e.id)).toEqual([effectId]);
  });
});
