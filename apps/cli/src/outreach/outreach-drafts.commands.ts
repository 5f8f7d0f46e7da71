import { Command, CommandRunner, Option } from 'nest-commander';
import type { ActionView, ReviewCard } from '@touchpoint/contracts';
import { AppError, ErrorCode } from '@touchpoint/errors';
import { MembersService } from '../../../gateway/src/members/members.service.js';
import { truncateText } from '@touchpoint/text';
import { badOption, type JsonOption } from '../commands/options.js';
import { GatewayDatabase } from '../database/gateway-database.js';
import { CliOutput } from '../output/cli-output.js';
import { OutreachClient } from './outreach-client.js';

interface OrgOption extends JsonOption {
  org?: string;
}

function requireOption(value: string | undefined, name: string): string {
  if (!value || value.trim() === '') throw badOption(name, 'is required');
  return value.trim();
}

/**
 * Who reviews from the CLI: `--member` must name a current member of the organization (seed 003
 * §4.5: approved_by and rejected_by record a member), read from the gateway's members now.
 * @throws AppError not_found (not a member of that organization), forbidden (the member left)
 */
async function reviewer(database: GatewayDatabase, members: MembersService, organizationId: string, memberId: string): Promise<string> {
  await database.connect();
  try {
    return (await members.current(organizationId, memberId)).id;
  } catch (err) {
    if (err instanceof AppError && err.code === ErrorCode.NotFound) throw new AppError(ErrorCode.NotFound, `--member ${memberId} is not a member of organization ${organizationId}`, { field: 'member' });
    if (err instanceof AppError && err.code === ErrorCode.Forbidden) throw new AppError(ErrorCode.Forbidden, `--member ${memberId} has left organization ${organizationId}`, { field: 'member' });
    throw err;
  }
}

function describeAction(a: ActionView): string {
  return `action ${a.id} is ${a.status}${a.approved_hash ? ` (hash ${a.approved_hash.slice(0, 12)}…)` : ''}${a.reject_then ? ` (then ${a.reject_then})` : ''}`;
}

function describeCard(c: ReviewCard): string {
  const draft = c.draft.subject ? `${c.draft.subject} — ${c.draft.body ?? ''}` : (c.draft.note ?? c.draft.body ?? '');
  return `${c.id}  ${c.type}  ${c.person.name ?? c.person.person_id}  → ${c.to ?? '(no address)'}  [${c.campaign.name}, ${c.campaign.status}]  ${Math.round(c.age_seconds / 60)} min\n    ${truncateText(draft.replace(/\s+/g, ' '), 160)}`;
}

/** `outreach:drafts:list --org <id> [--limit N]` → `{items: [card…], total}` (seed 003 §4.5, oldest first). */
@Command({ name: 'outreach:drafts:list', description: 'List outreach drafts waiting for review, oldest first' })
export class OutreachDraftsListCommand extends CommandRunner {
  constructor(
    private readonly outreach: OutreachClient,
    private readonly output: CliOutput,
  ) {
    super();
  }

  async run(_params: string[], options: OrgOption & { limit?: number }): Promise<void> {
    try {
      const page = await this.outreach.list(requireOption(options.org, 'org'), options.limit);
      const human = page.items.length ? `${page.items.map(describeCard).join('\n')}\n${page.total} waiting` : 'no drafts waiting';
      this.output.success(page, options.json, human);
    } catch (err) {
      this.output.failure(err, options.json);
    }
  }

  @Option({ flags: '--org <id>', description: 'Organization id', required: true })
  parseOrg(value: string): string {
    return value;
  }

  @Option({ flags: '--limit <n>', description: 'Most drafts to list (default 50, at most 200)' })
  parseLimit(value: string): number {
    return /^\d+$/.test(value) ? Number(value) : Number.NaN;
  }

  @Option({ flags: '--json', description: 'Print one JSON object on stdout' })
  parseJson(): boolean {
    return true;
  }
}

/**
 * `outreach:drafts:approve --org <id> --action <id> --member <id> [--subject s] [--body b] [--note n]`
 * → the approved action. Giving any of subject/body/note approves an edit (the draft check applies).
 * `--member` must be a current member of the organization; it is recorded as approved_by.
 */
@Command({ name: 'outreach:drafts:approve', description: 'Approve an outreach draft, as written or edited' })
export class OutreachDraftsApproveCommand extends CommandRunner {
  constructor(
    private readonly outreach: OutreachClient,
    private readonly database: GatewayDatabase,
    private readonly members: MembersService,
    private readonly output: CliOutput,
  ) {
    super();
  }

  async run(_params: string[], options: OrgOption & { action?: string; member?: string; subject?: string; body?: string; note?: string }): Promise<void> {
    try {
      const edit = Object.fromEntries(Object.entries({ subject: options.subject, body: options.body, note: options.note }).filter(([, v]) => v !== undefined)) as Record<string, string>;
      const org = requireOption(options.org, 'org');
      const actionId = requireOption(options.action, 'action');
      const member = await reviewer(this.database, this.members, org, requireOption(options.member, 'member'));
      const action = await this.outreach.approve(org, actionId, member, Object.keys(edit).length ? edit : undefined);
      this.output.success(action, options.json, describeAction(action));
    } catch (err) {
      this.output.failure(err, options.json);
    }
  }

  @Option({ flags: '--org <id>', description: 'Organization id', required: true })
  parseOrg(value: string): string {
    return value;
  }

  @Option({ flags: '--action <id>', description: 'The proposed action id', required: true })
  parseAction(value: string): string {
    return value;
  }

  @Option({ flags: '--member <id>', description: 'A current member of the organization who approves (recorded as approved_by)', required: true })
  parseMember(value: string): string {
    return value;
  }

  @Option({ flags: '--subject <text>', description: 'Edited subject (an email that is not a reply)' })
  parseSubject(value: string): string {
    return value;
  }

  @Option({ flags: '--body <text>', description: 'Edited body (email, LinkedIn message)' })
  parseBody(value: string): string {
    return value;
  }

  @Option({ flags: '--note <text>', description: 'Edited connection note (LinkedIn invitation)' })
  parseNote(value: string): string {
    return value;
  }

  @Option({ flags: '--json', description: 'Print one JSON object on stdout' })
  parseJson(): boolean {
    return true;
  }
}

/**
 * `outreach:drafts:reject --org <id> --action <id> --member <id> --then regenerate|stop [--reason text]`
 * → the rejected action. `--member` must be a current member of the organization; it is recorded as
 * rejected_by.
 */
@Command({ name: 'outreach:drafts:reject', description: 'Reject an outreach draft: regenerate (needs a reason) or stop' })
export class OutreachDraftsRejectCommand extends CommandRunner {
  constructor(
    private readonly outreach: OutreachClient,
    private readonly database: GatewayDatabase,
    private readonly members: MembersService,
    private readonly output: CliOutput,
  ) {
    super();
  }

  async run(_params: string[], options: OrgOption & { action?: string; member?: string; then?: string; reason?: string }): Promise<void> {
    try {
      const then = requireOption(options.then, 'then');
      if (then !== 'regenerate' && then !== 'stop') throw badOption('then', 'must be regenerate or stop');
      const org = requireOption(options.org, 'org');
      const actionId = requireOption(options.action, 'action');
      const member = await reviewer(this.database, this.members, org, requireOption(options.member, 'member'));
      const action = await this.outreach.reject(org, actionId, member, then, options.reason);
      this.output.success(action, options.json, describeAction(action));
    } catch (err) {
      this.output.failure(err, options.json);
    }
  }

  @Option({ flags: '--org <id>', description: 'Organization id', required: true })
  parseOrg(value: string): string {
    return value;
  }

  @Option({ flags: '--action <id>', description: 'The proposed action id', required: true })
  parseAction(value: string): string {
    return value;
  }

  @Option({ flags: '--member <id>', description: 'A current member of the organization who rejects (recorded as rejected_by)', required: true })
  parseMember(value: string): string {
    return value;
  }

  @Option({ flags: '--then <what>', description: 'regenerate (a new draft) or stop (end the enrollment)', required: true })
  parseThen(value: string): string {
    return value;
  }

  @Option({ flags: '--reason <text>', description: 'Why (required for regenerate, 1 to 1000 characters)' })
  parseReason(value: string): string {
    return value;
  }

  @Option({ flags: '--json', description: 'Print one JSON object on stdout' })
  parseJson(): boolean {
    return true;
  }
}

/** The providers of the outreach review commands, registered in the CLI module. */
export const OUTREACH_CLI_PROVIDERS = [OutreachClient, OutreachDraftsListCommand, OutreachDraftsApproveCommand, OutreachDraftsRejectCommand];
