import { Module } from '@nestjs/common';
import { PromptVersionsRepository } from './prompt-versions.repository.js';
import { PromptVersionsService } from './prompt-versions.service.js';

/** The versioned prompt templates' registry in the database. */
@Module({ providers: [PromptVersionsRepository, PromptVersionsService] })
export class PromptsModule {}
