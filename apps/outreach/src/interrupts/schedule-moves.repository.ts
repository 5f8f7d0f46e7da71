import { Injectable } from '@nestjs/common';
import { type Queryable, rowsOf } from '@touchpoint/database';

/** One row of `schedule_moves`, as the timeline shows it. */
export interface ScheduleMoveRow {
  id: string;
  message_id: string;
  return_date: string;
  return_text: string;
  time_zone: string;
  previous_next_check_at: Date | null;
  next_check_at: Date;
  bounded: 'none' | 'min' | 'max';
  created_at: Date;
}

/** Every SQL statement of out-of-office schedule moves (`schedule_moves`, see `AutoReplyResumeService`). */
@Injectable()
export class ScheduleMovesRepository {
  /**
   * Records that `m.messageId` moved the enrollment's next check, once per message
   * (`schedule_moves_once`). @returns false when this message already moved it
   */
  async recordOnce(
    db: Queryable,
    m: { organizationId: string; enrollmentId: string; messageId: string; returnDate: string; returnText: string; timeZone: string; previousNextCheckAt: Date | null; nextCheckAt: Date; bounded: ScheduleMoveRow['bounded']; now: Date },
  ): Promise<boolean> {
    const recorded = await rowsOf<{ id: string }>(
      db,
      `INSERT INTO schedule_moves (organization_id, enrollment_id, message_id, return_date, return_text, time_zone, previous_next_check_at, next_check_at, bounded, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT ON CONSTRAINT schedule_moves_once DO NOTHING RETURNING id`,
      [m.organizationId, m.enrollmentId, m.messageId, m.returnDate, m.returnText, m.timeZone, m.previousNextCheckAt, m.nextCheckAt, m.bounded, m.now],
    );
    return recorded.length > 0;
  }

  /** The moves of one enrollment, newest first (the timeline). */
  ofEnrollment(db: Queryable, enrollmentId: string): Promise<ScheduleMoveRow[]> {
    return rowsOf<ScheduleMoveRow>(db, `SELECT id, message_id, to_char(return_date, 'YYYY-MM-DD') AS return_date, return_text, time_zone, previous_next_check_at, next_check_at, bounded, created_at FROM schedule_moves WHERE enrollment_id = $1 ORDER BY created_at DESC, id DESC`, [
      enrollmentId,
    ]);
  }
}
