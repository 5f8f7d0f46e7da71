import { Inject, Injectable, type OnApplicationBootstrap } from '@nestjs/common';
import type { Logger } from '@touchpoint/observability';
import { LOGGER } from '@touchpoint/runtime';
import { templateSha256, versionOf } from './prompt-renderer.js';
import { PROMPT_TEMPLATES } from './prompt-templates.js';
import { PromptVersionsRepository } from './prompt-versions.repository.js';

/**
 * Records each prompt template version the code holds in `ai_prompt_versions` at start-up, so a
 * stored `ai_runs.prompt_version` can be traced to the text it stood for. A version whose text
 * changed without a bump is logged as an error: it breaks that trace.
 */
@Injectable()
export class PromptVersionsService implements OnApplicationBootstrap {
  constructor(
    private readonly repository: PromptVersionsRepository,
    @Inject(LOGGER) private readonly logger: Logger,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    for (const template of Object.values(PROMPT_TEMPLATES)) {
      const version = versionOf(template);
      const sha = templateSha256(template);
      const stored = await this.repository.record(version, template.kind, sha);
      if (stored !== undefined && stored !== sha) {
        this.logger.error({ event: 'ai.prompt_changed_without_version', version }, `prompt template ${version} changed without a version bump`);
      }
    }
  }
}
