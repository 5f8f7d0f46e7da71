/** One chat-completions call: one turn, no tools, a JSON object asked for (seed 003 §4.3). */
export interface ModelRequest {
  model: string;
  /** Our instructions and the output format. */
  system: string;
  /** The tagged, escaped data. */
  user: string;
  /** Deadline of the whole call (headers and body), ms. */
  timeoutMs: number;
  /** `max_tokens`; 0 sends none. */
  maxOutputTokens: number;
}

/** Token counts as the provider reported them. */
export interface ModelTokenUsage {
  prompt_tokens: number;
  completion_tokens: number;
}

/** What came of a call; never throws for provider trouble. */
export type ModelResponse = { outcome: 'answered'; content: string | null; finishReason: string | null; usage: ModelTokenUsage | null } | { outcome: 'timeout' } | { outcome: 'failed'; reason: string };

/**
 * The model, injected (STYLE: every outside thing is injected). The real one speaks the
 * OpenAI-compatible chat-completions API; tests reach the sandbox's endpoint through it.
 */
export abstract class ModelProvider {
  /** False when no model is configured: callers answer `unavailable` without calling. */
  abstract readonly configured: boolean;
  /** Makes exactly one call (no retries). */
  abstract complete(request: ModelRequest): Promise<ModelResponse>;
}
