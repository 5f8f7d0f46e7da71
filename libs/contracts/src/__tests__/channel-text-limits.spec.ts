import { CHANNEL_TEXT_MAX, DRAFT_EMAIL_BODY_MAX, DRAFT_LINKEDIN_MESSAGE_MAX, DRAFT_LINKEDIN_NOTE_MAX, LONGEST_TEXT_MAX, validateOutboxPayload, WHATSAPP_TEXT_MAX } from '../index.js';

describe('channel text limits', () => {
  it("keeps every outreach draft limit within its channel's send limit, so an approved draft is never refused at send", () => {
    expect(DRAFT_EMAIL_BODY_MAX).toBeLessThanOrEqual(CHANNEL_TEXT_MAX.email);
    expect(DRAFT_LINKEDIN_MESSAGE_MAX).toBeLessThanOrEqual(CHANNEL_TEXT_MAX.linkedin);
    expect(DRAFT_LINKEDIN_NOTE_MAX).toBeLessThanOrEqual(CHANNEL_TEXT_MAX.linkedin);
  });

  it("gives WhatsApp Meta's 4096 and email more than WhatsApp; the longest bound covers every channel", () => {
    expect(WHATSAPP_TEXT_MAX).toBe(4096);
    expect(CHANNEL_TEXT_MAX.whatsapp).toBe(4096);
    expect(CHANNEL_TEXT_MAX.email).toBeGreaterThan(CHANNEL_TEXT_MAX.whatsapp);
    expect(LONGEST_TEXT_MAX).toBe(Math.max(...Object.values(CHANNEL_TEXT_MAX)));
  });

  it("agrees with the dispatcher's payload rules at each dispatched channel's limit, in code points", () => {
    for (const channel of ['whatsapp', 'email', 'linkedin'] as const) {
      const max = CHANNEL_TEXT_MAX[channel];
      expect(validateOutboxPayload(channel, { type: 'text', body: '\u{1F600}'.repeat(max) }, 'k')).toEqual([]);
      expect(validateOutboxPayload(channel, { type: 'text', body: '\u{1F600}'.repeat(max + 1) }, 'k')).not.toEqual([]);
    }
  });
});
