import type { AiKind } from '@touchpoint/contracts';
import type { PromptTemplate } from './prompt.types.js';
import { conversationSummaryTemplate } from './templates/conversation-summary.template.js';
import { followupClassifyTemplate } from './templates/followup-classify.template.js';
import { followupMessageTemplate } from './templates/followup-message.template.js';
import { outreachDecideTemplate } from './templates/outreach-decide.template.js';
import { outreachDraftEmailTemplate } from './templates/outreach-draft-email.template.js';
import { outreachDraftLinkedinTemplate } from './templates/outreach-draft-linkedin.template.js';
import { promiseResumeTemplate } from './templates/promise-resume.template.js';

/** The one prompt template of each kind (a `Record` over `AiKind`, so a new kind cannot lack one). */
export const PROMPT_TEMPLATES: { readonly [K in AiKind]: PromptTemplate<unknown> } = {
  followup_classify: followupClassifyTemplate,
  followup_message: followupMessageTemplate,
  outreach_decide: outreachDecideTemplate,
  outreach_draft_email: outreachDraftEmailTemplate,
  outreach_draft_linkedin: outreachDraftLinkedinTemplate,
  conversation_summary: conversationSummaryTemplate,
  promise_resume: promiseResumeTemplate,
};
