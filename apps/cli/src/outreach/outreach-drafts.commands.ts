import { Command, CommandRunner, Option } from 'nest-commander';
import type { ActionView, ReviewCard } from '@touchpoint/contracts';
import { truncateText } from '@touchpoint/text';
import { badOption, type JsonOption } from '../commands/options.js';
import { CliOutput } from '../output/cli-output.js';
import { OutreachClient } from './outreach-client.js';

interface OrgOption extends JsonOption {
  org?: string;
}

function requireOption(value: string | undefined, name: string): string {
  if (!value || value.trim() === '') throw badOption(name, 'is required');
  return value.trim();
}

function describeAction(a: ActionView): string {
  return `action ${a.action_id} is ${a.status}${a.approved_hash ? ` (hash ${a.approved_hash.slice(0, 12)}…)` : ''}${a.reject_then ? ` (then ${a.reject_then})` : ''}`;
}

function describeCard(c: ReviewCard): string {
  const draft = c.draft.subject ? `${c.draft.subject} — ${c.draft.body ?? ''}` : (c.draft.note ?? c.draft.body ?? '');
  return `${c.action_id}  ${c.type}  ${c.person.name ?? c.person.person_id}  → ${c.to ?? '(no address)'}  [${c.campaign.name}, ${c.campaign.status}]  ${Math.round(c.age_seconds / 60)} min\n    ${truncateText(draft.replace(/\s+/g, ' '), 160)}`;
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
 */
@Command({ name: 'outreach:drafts:approve', description: 'Approve an outreach draft, as written or edited' })
export class OutreachDraftsApproveCommand extends CommandRunner {
  constructor(
    private readonly outreach: OutreachClient,
    private readonly output: CliOutput,
  ) {
    super();
  }

  async run(_params: string[], options: OrgOption & { action?: string; member?: string; subject?: string; body?: string; note?: string }): Promise<void> {
    try {
      const edit = Object.fromEntries(Object.entries({ subject: options.subject, body: options.body, note: options.note }).filter(([, v]) => v !== undefined)) as Record<string, string>;
      const action = await this.outreach.approve(requireOption(options.org, 'org'), requireOption(options.action, 'action'), requireOption(options.member, 'member'), Object.keys(edit).length ? edit : undefined);
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

  @Option({ flags: '--member <id>', description: 'The member who approves (recorded as approved_by)', required: true })
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

/** `outreach:drafts:reject --org <id> --action <id> --member <id> --then regenerate|stop [--reason text]` → the rejected action. */
@Command({ name: 'outreach:drafts:reject', description: 'Reject an outreach draft: regenerate (needs a reason) or stop' })
export class OutreachDraftsRejectCommand extends CommandRunner {
  constructor(
    private readonly outreach: OutreachClient,
    private readonly output: CliOutput,
  ) {
    super();
  }

  async run(_params: string[], options: OrgOption & { action?: string; member?: string; then?: string; reason?: string }): Promise<void> {
    try {
      const then = requireOption(options.then, 'then');
      if (then !== 'regenerate' && then !== 'stop') throw badOption('then', 'must be regenerate or stop');
      const action = await this.outreach.reject(requireOption(options.org, 'org'), requireOption(options.action, 'action'), requireOption(options.member, 'member'), then, options.reason);
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

  @Option({ flags: '--member <id>', description: 'The member who rejects (recorded as rejected_by)', required: true })
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
