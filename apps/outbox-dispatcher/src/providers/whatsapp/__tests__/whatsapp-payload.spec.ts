import { readFileSync } from 'node:fs';
import type { OutboxTemplatePayload } from '@touchpoint/contracts';
import { buildWhatsAppMessage, validateWhatsAppPayload } from '@touchpoint/contracts';

const fixture = (name: string) => JSON.parse(readFileSync(new URL(`../../../../../../../shared/fixtures/meta/${name}`, import.meta.url), 'utf8'));

describe('buildWhatsAppMessage', () => {
  it('builds the documented text request, plus the entry id as biz_opaque_callback_data', () => {
    const sut = buildWhatsAppMessage({ type: 'text', body: 'text-message-content' }, '5511987654321', 'entry-1');
    expect(sut).toEqual({ ...fixture('send-text-request.json'), biz_opaque_callback_data: 'entry-1' });
  });

  it('builds the documented template request', () => {
    const doc = fixture('send-template-request.json');
    const payload: OutboxTemplatePayload = { type: 'template', name: doc.template.name, language: doc.template.language.code, components: doc.template.components };
    expect(buildWhatsAppMessage(payload, '5511987654321', 'entry-2')).toEqual({ ...doc, biz_opaque_callback_data: 'entry-2' });
  });

  it('builds the documented mark-as-read request, without a callback token', () => {
    const doc = fixture('mark-read-request.json');
    expect(buildWhatsAppMessage({ type: 'read_receipt', message_id: doc.message_id }, '5511987654321', 'entry-3')).toEqual(doc);
  });

  it('keeps the caller address as given', () => {
    expect(buildWhatsAppMessage({ type: 'text', body: 'hi' }, '+55 92 98888-7777', 'e').to).toBe('+55 92 98888-7777');
  });

  it('sends media by link, by id, or by the id an upload produced', () => {
    expect(buildWhatsAppMessage({ type: 'media', media_type: 'image', link: 'https://x.example/a.png', caption: 'A' }, '1', 'e')).toMatchObject({ type: 'image', image: { link: 'https://x.example/a.png', caption: 'A' } });
    expect(buildWhatsAppMessage({ type: 'media', media_type: 'audio', media_id: '42' }, '1', 'e')).toMatchObject({ type: 'audio', audio: { id: '42' } });
    expect(buildWhatsAppMessage({ type: 'media', media_type: 'document', upload: { data_base64: 'AA==', mime_type: 'application/pdf', filename: 'a.pdf' } }, '1', 'e', '77')).toMatchObject({ document: { id: '77', filename: 'a.pdf' } });
  });
});

const textParameter = (text: unknown) => ({
  type: 'template',
  name: 'order_update',
  language: 'pt_BR',
  components: [
    {
      type: 'body',
      parameters: [
        { type: 'text', text: 'Ana' },
        { type: 'text', text },
      ],
    },
  ],
});

describe('validateWhatsAppPayload', () => {
  it.each([
    [{ type: 'text', body: 'hi' }, 'k'],
    // 4,096 characters (code points), 8,192 UTF-16 units: within Graph's limit.
    [{ type: 'text', body: '\u{1F600}'.repeat(4096) }, 'k'],
    [{ type: 'media', media_type: 'image', link: 'https://x.example/i.png', caption: '\u{1F600}'.repeat(1024) }, 'k'],
    [{ type: 'template', name: 'order_update', language: 'pt_BR', components: [{ type: 'body', parameters: [{ type: 'text', text: 'Ana' }] }] }, 'k'],
    [{ type: 'media', media_type: 'video', link: 'https://x.example/v.mp4' }, 'k'],
    // Four spaces in a row are still within Meta's rule for a template text parameter.
    [{ type: 'template', name: 'order_update', language: 'pt_BR', components: [{ type: 'body', parameters: [{ type: 'text', text: 'Ana    Souza' }] }] }, 'k'],
    [{ type: 'interactive', interactive: { type: 'button', body: { text: 'Pick' }, action: { buttons: [] } } }, 'k'],
    [{ type: 'read_receipt', message_id: 'wamid.A' }, 'read:wamid.A'],
  ])('accepts %j', (payload, key) => {
    expect(validateWhatsAppPayload(payload, key)).toEqual([]);
  });

  it.each([
    [{ type: 'text', body: 'x'.repeat(4097) }, 'exceeds'],
    [{ type: 'text', body: '\u{1F600}'.repeat(4097) }, 'exceeds'],
    [{ type: 'template', name: 'Bad Name', language: 'pt_BR' }, 'name'],
    [{ type: 'template', name: 'ok', language: 'portuguese' }, 'language'],
    [{ type: 'template', name: 'ok', language: 'en', components: [{ type: 'button', sub_type: 'quick_reply', parameters: [] }] }, 'index'],
    [{ type: 'media', media_type: 'gif', link: 'https://x' }, 'media_type'],
    [{ type: 'media', media_type: 'image' }, 'exactly one'],
    [{ type: 'media', media_type: 'audio', media_id: '1', caption: 'c' }, 'audio takes no caption'],
    [{ type: 'media', media_type: 'image', link: 'ftp://x' }, 'http'],
    [{ type: 'interactive', interactive: { type: 'button', action: {} } }, 'body.text'],
    [{ type: 'read_receipt', message_id: 'wamid.A' }, 'read:{message_id}'],
    [null, 'object'],
    // Meta refuses these text parameters: 131008 (empty), 132018 (newline, tab, more than 4 spaces in a row).
    [textParameter(''), 'parameters[1].text must not be empty'],
    [textParameter('   '), 'parameters[1].text must not be empty'],
    [textParameter('Ana\nSouza'), 'newline or a tab'],
    [textParameter('Ana\r\nSouza'), 'newline or a tab'],
    [textParameter('Ana\tSouza'), 'newline or a tab'],
    [textParameter('Ana     Souza'), 'more than 4 consecutive spaces'],
    [textParameter(7), 'text must be a string'],
    [{ type: 'template', name: 'ok', language: 'en', components: [{ type: 'header', parameters: [{ type: 'text', text: 'a\nb' }] }] }, 'components[0].parameters[0].text must not contain a newline'],
  ])('rejects %j', (payload, problem) => {
    expect(validateWhatsAppPayload(payload, 'k').join(' ')).toContain(problem);
  });
});

describe('Meta contextual replies (context.message_id)', () => {
  const quoted = 'wamid.HBgNNTUxMTk4NzY1NDMyMRUCABIYFjNFQjBEMkZBNkE3NjA2OUU2OTZBAA==';
  it.each([
    [{ type: 'text', body: 'hi', reply_to: quoted }],
    [{ type: 'media', media_type: 'image', link: 'https://x.example/a.png', reply_to: quoted }],
    [{ type: 'media', media_type: 'document', media_id: '42', reply_to: quoted }],
    [{ type: 'interactive', interactive: { type: 'button', body: { text: 'Pick' }, action: { buttons: [] } }, reply_to: quoted }],
    [{ type: 'template', name: 'order_update', language: 'pt_BR', reply_to: quoted }],
  ])('quotes the message on %j', (payload) => {
    expect(validateWhatsAppPayload(payload, 'k')).toEqual([]);
    expect(buildWhatsAppMessage(payload as never, '5511987654321', 'e').context).toEqual({ message_id: quoted });
  });

  it('refuses a reply_to that is not a message id, and on a read receipt', () => {
    expect(validateWhatsAppPayload({ type: 'media', media_type: 'image', link: 'https://x.example/a.png', reply_to: '' }, 'k').join(' ')).toContain('reply_to');
    expect(validateWhatsAppPayload({ type: 'read_receipt', message_id: 'wamid.A', reply_to: 'wamid.B' }, 'read:wamid.A').join(' ')).toContain('reply_to');
  });
});

describe('template components as Meta defines them', () => {
  const template = (components: unknown[]) => ({ type: 'template', name: 'summer_offer', language: 'en_US', components });
  const limitedTimeOffer = [
    { type: 'header', parameters: [{ type: 'image', image: { link: 'https://x.example/h.png' } }] },
    { type: 'limited_time_offer', parameters: [{ type: 'limited_time_offer', limited_time_offer: { expiration_time_ms: 1_767_225_600_000 } }] },
    { type: 'button', sub_type: 'copy_code', index: 0, parameters: [{ type: 'coupon_code', coupon_code: 'SUMMER25' }] },
    { type: 'button', sub_type: 'url', index: 1, parameters: [{ type: 'text', text: 'n3mtql' }] },
  ];
  const carousel = [
    { type: 'body', parameters: [{ type: 'text', text: 'Ana' }] },
    {
      type: 'carousel',
      cards: [0, 1].map((card_index) => ({
        card_index,
        components: [
          { type: 'header', parameters: [{ type: 'image', image: { id: `10${card_index}` } }] },
          { type: 'button', sub_type: 'quick_reply', index: '0', parameters: [{ type: 'payload', payload: `more-${card_index}` }] },
          { type: 'button', sub_type: 'url', index: 1, parameters: [{ type: 'text', text: `p${card_index}` }] },
        ],
      })),
    },
  ];

  it('accepts a limited-time offer and a media card carousel, and sends their components unchanged', () => {
    for (const components of [limitedTimeOffer, carousel]) {
      expect(validateWhatsAppPayload(template(components), 'k')).toEqual([]);
      expect((buildWhatsAppMessage(template(components) as never, '1', 'e').template as { components: unknown }).components).toEqual(components);
    }
  });

  it.each([
    [[{ type: 'button', index: 0, parameters: [{ type: 'payload', payload: 'x' }] }], 'sub_type'],
    [[{ type: 'button', sub_type: 'call_me', index: 0 }], 'sub_type'],
    [[{ type: 'button', sub_type: 'quick_reply', parameters: [{ type: 'payload', payload: 'x' }] }], 'index'],
    [[{ type: 'button', sub_type: 'quick_reply', index: 10 }], 'index'],
    [[{ type: 'limited_time_offer', parameters: [] }], 'limited_time_offer parameter'],
    [[{ type: 'limited_time_offer', parameters: [{ type: 'limited_time_offer', limited_time_offer: { expiration_time_ms: 'tomorrow' } }] }], 'expiration_time_ms'],
    [[{ type: 'button', sub_type: 'copy_code', index: 0, parameters: [{ type: 'coupon_code' }] }], 'coupon_code'],
    [[{ type: 'carousel', cards: [] }], 'cards'],
    [[{ type: 'carousel', cards: Array.from({ length: 11 }, (_, i) => ({ card_index: i, components: [{ type: 'body' }] })) }], 'cards'],
    [
      [
        {
          type: 'carousel',
          cards: [
            { card_index: 0, components: [{ type: 'body' }] },
            { card_index: 0, components: [{ type: 'body' }] },
          ],
        },
      ],
      'repeats',
    ],
    [[{ type: 'carousel', cards: [{ card_index: 0, components: [{ type: 'footer' }] }] }], 'cards[0].components[0].type'],
    [[{ type: 'carousel', cards: [{ card_index: 0, components: [{ type: 'button', sub_type: 'url' }] }] }], 'index'],
    [[{ type: 'header', parameters: [{ type: 'image', image: { link: 'ftp://x.example/h.png' } }] }], 'http'],
    [[{ type: 'body', parameters: [{ type: 'sticker' }] }], 'type must be one of'],
  ])('rejects %j', (components, problem) => {
    expect(validateWhatsAppPayload(template(components), 'k').join(' ')).toContain(problem);
  });
});
