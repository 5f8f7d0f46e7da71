import type { AiFieldType, AiKind } from '@touchpoint/contracts';

/**
 * One named section of a prompt's data. `body` is tenant data (lines are joined with newlines):
 * the renderer escapes all of it, so a template cannot forget to.
 */
export interface PromptSection {
  /** Tag name: lower-case letters and `_` only (checked by the renderer). */
  tag: string;
  body: string | string[];
}

/** A field the template asks the model for, described in the output format. */
export interface PromptOutputField {
  name: string;
  type: AiFieldType;
  description: string;
}

/** A versioned prompt template of one kind (kept in code; `ai_runs` stores `<kind>@<version>`). */
export interface PromptTemplate<I = unknown> {
  kind: AiKind;
  /** Bumped whenever the instructions, output fields or section names change. */
  version: number;
  /** What the model does and its rules, numbered; the shared data rule is prepended by the renderer. */
  instructions: string[];
  /** The fields the model is asked for (the caller's required fields are added if missing). */
  output: PromptOutputField[];
  /** Problems with the input, in words; empty when usable. */
  validate(input: unknown): string[];
  /** The data sections, in the order the model reads them. */
  sections(input: I): PromptSection[];
}

/** A prompt ready for one chat-completions call. */
export interface RenderedPrompt {
  /** `<kind>@<version>`. */
  version: string;
  /** The system message: our instructions and the output format (no tenant text). */
  system: string;
  /** The user message: the tagged, escaped data sections. */
  user: string;
  /** SHA-256 (hex) of the system and user messages as sent. */
  sha256: string;
}
