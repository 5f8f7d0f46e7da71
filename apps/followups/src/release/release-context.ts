import type { AiInputByKind, AiRunResult, FollowupSettingsView, OutgoingMessage } from '@touchpoint/contracts';
import type { Tx } from '@touchpoint/database';
import type { ContactActivity } from '../contacts/contacts.repository.js';
import type { EnrollmentRow, NewEnrollmentEvent } from '../enrollments/enrollment-row.js';
import type { CompiledVersion } from '../flows/flow-version-cache.js';
import { recipientSendWindow } from './gates/recipient-window.js';
import type { NewEffect, StepWrite } from './release.repository.js';
import type { StepFacts } from './step-rules.js';

/** What one call of `releaseOne` did (`dropped`: an AI step's answer came after its fence moved on). */
export type ReleaseOutcome = 'idle' | 'released' | 'busy' | 'failed' | 'dropped';

/** AI kinds a step asks ai-gateway for. */
export type StepAiKind = 'followup_classify' | 'followup_message';

/** A model call the first pass of an AI step leaves for after its commit (seed 000 "AI step"). */
export interface AiRequest {
  enrollmentId: string;
  organizationId: string;
  nodeId: string;
  step: number;
  /** The fence: `ai_attempts` as the first pass wrote it. */
  attempts: number;
  kind: StepAiKind;
  input: AiInputByKind[StepAiKind];
}

/** The second pass of an AI step: the fence to claim under, and the model's answer. */
export interface AiAnswer {
  request: AiRequest;
  result: AiRunResult;
}

/** What the steps of one release transaction write at its end: their rows, then their bus messages. */
export interface PendingWrites {
  writes: StepWrite[];
  messages: OutgoingMessage[];
}

/**
 * The working state of one enrollment's step inside the release transaction: the row being changed
 * (`state`, mutated in place by the node interpreter, the send step and the gates), and what to
 * write with it. Built by NodeInterpreter.step, written once per transaction by ReleaseService.
 */
export interface ReleaseContext {
  tx: Tx;
  /** The release's clock (UTC instant), one per transaction. */
  now: Date;
  state: EnrollmentRow;
  contact: ContactActivity;
  version: CompiledVersion;
  organization: FollowupSettingsView;
  events: NewEnrollmentEvent[];
  messages: OutgoingMessage[];
  /** Effects of this step, written with it. */
  effects: NewEffect[];
  /** The contact's follow-up sends of the last 24 h, as of the claim (per-contact cap). */
  recentSends: { count: number; oldest: Date | null };
  /** A send was queued in this transaction: the next one waits for its own (seed 000: one step per transaction). */
  sent: boolean;
  /** Second pass of an AI step: the model's answer for (node, visit). */
  ai?: AiAnswer;
  /** First pass of an AI step: the call to make once this transaction commits. */
  aiRequest?: AiRequest;
}

/** What conditions and templates of this step read: the contact, the enrollment, and the zone for `anchor.*`. */
export function factsOf(ctx: ReleaseContext): StepFacts {
  return { contact: ctx.contact, enrollment: ctx.state, timezone: recipientSendWindow(ctx.version.settings, ctx.organization, ctx.contact.time_zone).timezone };
}
