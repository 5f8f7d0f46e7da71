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

describe('validateWhatsAppPayload', () => {
  it.each([
    [{ type: 'text', body: 'hi' }, 'k'],
    // 4,096 characters (code points), 8,192 UTF-16 units: within Graph's limit.
    [{ type: 'text', body: '\u{1F600}'.repeat(4096) }, 'k'],
    [{ type: 'media', media_type: 'image', link: 'https://x.example/i.png', caption: '\u{1F600}'.repeat(1024) }, 'k'],
    [{ type: 'template', name: 'order_update', language: 'pt_BR', components: [{ type: 'body', parameters: [{ type: 'text', text: 'Ana' }] }] }, 'k'],
    [{ type: 'media', media_type: 'video', link: 'https://x.example/v.mp4' }, 'k'],
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
    [{ type: 'template', name: 'ok', language: 'en', components: [{ type: 'button', parameters: [] }] }, 'index'],
    [{ type: 'media', media_type: 'gif', link: 'https://x' }, 'media_type'],
    [{ type: 'media', media_type: 'image' }, 'exactly one'],
    [{ type: 'media', media_type: 'audio', media_id: '1', caption: 'c' }, 'audio takes no caption'],
    [{ type: 'media', media_type: 'image', link: 'ftp://x' }, 'http'],
    [{ type: 'interactive', interactive: { type: 'button', action: {} } }, 'body.text'],
    [{ type: 'read_receipt', message_id: 'wamid.A' }, 'read:{message_id}'],
    [null, 'object'],
  ])('rejects %j', (payload, problem) => {
    expect(validateWhatsAppPayload(payload, 'k').join(' ')).toContain(problem);
  });
});
