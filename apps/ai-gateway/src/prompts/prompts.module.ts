import { Module } from '@nestjs/common';
import { PromptVersionsService } from './prompt-versions.service.js';

/** The versioned prompt templates' registry in the database. */
@Module({ providers: [PromptVersionsService] })
export class PromptsModule {}
