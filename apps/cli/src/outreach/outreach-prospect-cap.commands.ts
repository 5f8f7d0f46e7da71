import { Command, CommandRunner, Option } from 'nest-commander';
import type { OutboxProspectCapView } from '@touchpoint/contracts';
import { badOption, type JsonOption } from '../commands/options.js';
import { CliOutput } from '../output/cli-output.js';
import { OutreachClient } from './outreach-client.js';

interface OrgOption extends JsonOption {
  org?: string;
}

/** Largest per-day cap (the dispatcher refuses more too). */
const PROSPECT_CAP_MAX = 100_000;

function requireOrg(value: string | undefined): string {
  if (!value || value.trim() === '') throw badOption('org', 'is required');
  return value.trim();
}

function describeCap(c: OutboxProspectCapView): string {
  const what = c.prospect_emails_per_day === 0 ? 'every prospect send stopped' : `${c.prospect_emails_per_day} prospect emails per mailbox and UTC day`;
  return `organization ${c.organization_id}: ${what}${c.is_default ? ' (the default)' : ''}`;
}

/**
 * `--per-day`: an integer from 0 to 100000, or `default` (back to 30).
 * @throws AppError validation_failed
 */
export function parsePerDay(value: string | undefined): number | null {
  if (value === undefined || value.trim() === '') throw badOption('per-day', 'is required (an integer from 0 to 100000, or default)');
  const v = value.trim().toLowerCase();
  if (v === 'default') return null;
  if (!/^\d+$/.test(v) || Number(v) > PROSPECT_CAP_MAX) throw badOption('per-day', 'must be an integer from 0 to 100000, or default');
  return Number(v);
}

/** `outreach:prospect-cap:get --org <id>` → `{organization_id, prospect_emails_per_day, is_default}` (seed 003 §6). */
@Command({ name: 'outreach:prospect-cap:get', description: "Show the organization's daily prospect email cap per mailbox" })
export class OutreachProspectCapGetCommand extends CommandRunner {
  constructor(
    private readonly outreach: OutreachClient,
    private readonly output: CliOutput,
  ) {
    super();
  }

  async run(_params: string[], options: OrgOption): Promise<void> {
    try {
      const cap = await this.outreach.prospectCap(requireOrg(options.org));
      this.output.success(cap, options.json, describeCap(cap));
    } catch (err) {
      this.output.failure(err, options.json);
    }
  }

  @Option({ flags: '--org <id>', description: 'Organization id', required: true })
  parseOrg(value: string): string {
    return value;
  }

  @Option({ flags: '--json', description: 'Print one JSON object on stdout' })
  parseJson(): boolean {
    return true;
  }
}

/**
 * `outreach:prospect-cap:set --org <id> --per-day <n|default>`: prospect emails one mailbox may
 * send per UTC day; 0 stops every prospect send; `default` goes back to 30 (seed 003 §6).
 */
@Command({ name: 'outreach:prospect-cap:set', description: "Set the organization's daily prospect email cap per mailbox (0 stops every prospect send)" })
export class OutreachProspectCapSetCommand extends CommandRunner {
  constructor(
    private readonly outreach: OutreachClient,
    private readonly output: CliOutput,
  ) {
    super();
  }

  async run(_params: string[], options: OrgOption & { perDay?: string }): Promise<void> {
    try {
      const org = requireOrg(options.org);
      const cap = await this.outreach.setProspectCap(org, parsePerDay(options.perDay));
      this.output.success(cap, options.json, describeCap(cap));
    } catch (err) {
      this.output.failure(err, options.json);
    }
  }

  @Option({ flags: '--org <id>', description: 'Organization id', required: true })
  parseOrg(value: string): string {
    return value;
  }

  @Option({ flags: '--per-day <n>', description: 'Prospect emails per mailbox and UTC day (0 to 100000; 0 stops every prospect send), or default', required: true })
  parsePerDayOption(value: string): string {
    return value;
  }

  @Option({ flags: '--json', description: 'Print one JSON object on stdout' })
  parseJson(): boolean {
    return true;
  }
}

/** The providers of the prospect cap commands, registered in the CLI module. */
export const OUTREACH_PROSPECT_CAP_CLI_PROVIDERS = [OutreachProspectCapGetCommand, OutreachProspectCapSetCommand];
