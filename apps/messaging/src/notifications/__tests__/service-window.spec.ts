import { AppError } from '@touchpoint/errors';
import { WHATSAPP_SERVICE_WINDOW_MS } from '@touchpoint/time';
import { chooseWhatsAppContent, SERVICE_WINDOW_MARGIN_MS, whatsAppTemplateContent } from '../service-window.js';

const now = new Date('2026-12-01T12:00:00Z');
const ago = (ms: number) => new Date(now.getTime() - ms);
const HOUR = 3_600_000;

describe(chooseWhatsAppContent.name, () => {
  it.each([
    ['a message a minute ago, no template', ago(60_000), false, 'text'],
    ['a message a minute ago, a template', ago(60_000), true, 'text'],
    ['a message 23 h ago, a template', ago(23 * HOUR), true, 'text'],
    ['inside the last margin, a template', ago(WHATSAPP_SERVICE_WINDOW_MS - SERVICE_WINDOW_MARGIN_MS + 1), true, 'template'],
    ['inside the last margin, no template', ago(WHATSAPP_SERVICE_WINDOW_MS - SERVICE_WINDOW_MARGIN_MS + 1), false, 'text'],
    ['exactly 24 h ago, a template', ago(WHATSAPP_SERVICE_WINDOW_MS), true, 'template'],
    ['exactly 24 h ago, no template', ago(WHATSAPP_SERVICE_WINDOW_MS), false, 'template_required'],
    ['25 h ago, a template', ago(25 * HOUR), true, 'template'],
    ['25 h ago, no template', ago(25 * HOUR), false, 'template_required'],
    ['never wrote, a template', null, true, 'template'],
    ['never wrote, no template', null, false, 'template_required'],
  ])('%s → %s', (_case, lastInbound, hasTemplate, expected) => {
    expect(chooseWhatsAppContent(lastInbound, now, hasTemplate)).toBe(expected);
  });
});

describe(whatsAppTemplateContent.name, () => {
  it('fills the body parameters from the variables in the order the template names them', () => {
    const sut = whatsAppTemplateContent({ name: 'payment_received', language: 'pt_BR', parameters: ['name', 'amount'] }, { amount: 10, name: 'Ana' });
    expect(sut).toEqual({
      name: 'payment_received',
      language: 'pt_BR',
      components: [
        {
          type: 'body',
          parameters: [
            { type: 'text', text: 'Ana' },
            { type: 'text', text: '10' },
          ],
        },
      ],
    });
  });

  it('sends no components for a template without parameters', () => {
    expect(whatsAppTemplateContent({ name: 'hello_world', language: 'en_US', parameters: [] })).toEqual({ name: 'hello_world', language: 'en_US' });
  });

  it('refuses a named variable that has no value', () => {
    expect(() => whatsAppTemplateContent({ name: 't', language: 'es', parameters: ['name', 'code'] }, { name: 'Ana' })).toThrow(AppError);
    try {
      whatsAppTemplateContent({ name: 't', language: 'es', parameters: ['name', 'code'] }, { name: 'Ana' });
    } catch (err) {
      expect(err).toMatchObject({ code: 'validation_failed', details: { missing: ['code'] } });
    }
  });
});
