import { leftQueue } from '../../apps/console/src/review/edits.js';

describe('console review edits', () => {
  describe('leftQueue: which failed approve or reject drops the stored edit', () => {
    it.each([
      [409, 'action_not_pending', true],
      [409, 'campaign_not_active', false],
      [409, 'outreach_stopped', false],
      [409, 'enrollment_not_active', false],
      [422, 'draft_placeholder', false],
      [503, 'network_error', false],
      [404, 'not_found', false],
    ])('%i %s → %s', (status, code, expected) => {
      expect(leftQueue(status, code)).toBe(expected);
    });
  });
});
