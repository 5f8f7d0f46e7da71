import { Injectable } from '@nestjs/common';
import { DataSource } from 'typeorm';
import { poolOf, rowsOf } from '@touchpoint/database';

/** Every SQL statement of `ai_prompt_versions`. */
@Injectable()
export class PromptVersionsRepository {
  constructor(private readonly dataSource: DataSource) {}

  /**
   * Records a template version (idempotent) and answers the text digest stored for it: the one
   * just written, or the one an earlier start recorded (which differs when the text changed
   * without a version bump).
   */
  async record(version: string, kind: string, templateSha256: string): Promise<string | undefined> {
    const [row] = await rowsOf<{ template_sha256: string }>(
      poolOf(this.dataSource),
      `INSERT INTO ai_prompt_versions (version, kind, template_sha256) VALUES ($1, $2, $3)
       ON CONFLICT (version) DO UPDATE SET version = EXCLUDED.version
       RETURNING template_sha256`,
      [version, kind, templateSha256],
    );
    return row?.template_sha256;
  }
}
