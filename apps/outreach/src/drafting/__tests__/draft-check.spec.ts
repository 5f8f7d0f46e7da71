import { checkDraft, EMAIL_BODY_MAX, mergeDraftEdit, EMAIL_SUBJECT_MAX, LINKEDIN_MESSAGE_MAX, LINKEDIN_NOTE_MAX } from '../draft-check.js';

describe('checkDraft', () => {
  it.each([
    ['email', false, { subject: 'Chairs for Acme', body: 'Hi Sarah, would a short call help?' }, { subject: 'Chairs for Acme', body: 'Hi Sarah, would a short call help?' }],
    ['email reply drops the subject', true, { subject: 'Re: x', body: 'Yes, Tuesday works.' }, { body: 'Yes, Tuesday works.' }],
    ['linkedin_connection drops a body', false, { note: 'Hi Sarah, glad to connect.', body: 'extra' }, { note: 'Hi Sarah, glad to connect.' }],
    ['linkedin_message drops a note and a subject', false, { body: 'Thanks for connecting!', note: 'n', subject: 's' }, { body: 'Thanks for connecting!' }],
    ['email trims both ends', false, { subject: '  Hello ', body: '\n Body \n' }, { subject: 'Hello', body: 'Body' }],
  ] as const)('passes %s and keeps only the fields of the type', (name, isReply, input, draft) => {
    const type = name.startsWith('email') ? 'email' : name.startsWith('linkedin_connection') ? 'linkedin_connection' : 'linkedin_message';
    expect(checkDraft(type, isReply, input)).toEqual({ ok: true, draft });
  });

  it.each([
    ['email', false, { body: 'no subject' }, 'draft_empty', 'subject'],
    ['email', false, { subject: 'S', body: '   ' }, 'draft_empty', 'body'],
    ['email', true, { subject: 'S' }, 'draft_empty', 'body'],
    ['email', false, {}, 'draft_empty', 'subject'],
    ['email', false, null, 'draft_empty', 'subject'],
    ['email', false, { subject: 42, body: 'b' }, 'draft_empty', 'subject'],
    ['linkedin_connection', false, { note: '' }, 'draft_empty', 'note'],
    ['linkedin_message', false, { note: 'only a note' }, 'draft_empty', 'body'],
    ['email', false, { subject: 'x'.repeat(EMAIL_SUBJECT_MAX + 1), body: 'b' }, 'draft_too_long', 'subject'],
    ['email', false, { subject: 's', body: 'x'.repeat(EMAIL_BODY_MAX + 1) }, 'draft_too_long', 'body'],
    ['linkedin_connection', false, { note: 'x'.repeat(LINKEDIN_NOTE_MAX + 1) }, 'draft_too_long', 'note'],
    ['linkedin_connection', false, { note: '\u{1F600}'.repeat(LINKEDIN_NOTE_MAX + 1) }, 'draft_too_long', 'note'],
    ['linkedin_message', false, { body: 'x'.repeat(LINKEDIN_MESSAGE_MAX + 1) }, 'draft_too_long', 'body'],
    ['email', false, { subject: 'Hi [First name]', body: 'b' }, 'draft_placeholder', 'subject'],
    ['email', false, { subject: 's', body: 'Hello {{company}} team' }, 'draft_placeholder', 'body'],
    ['email', false, { subject: 's', body: 'Hello {first_name}' }, 'draft_placeholder', 'body'],
    ['email', false, { subject: 's', body: 'Empty brackets [] too' }, 'draft_placeholder', 'body'],
    ['linkedin_message', false, { body: 'See [link]' }, 'draft_placeholder', 'body'],
    ['linkedin_connection', false, { note: 'See https://acme.example/demo' }, 'draft_link_in_note', 'note'],
    ['linkedin_connection', false, { note: 'Visit www.acme.com soon' }, 'draft_link_in_note', 'note'],
    ['linkedin_connection', false, { note: 'Our site acme.io has it' }, 'draft_link_in_note', 'note'],
  ] as const)('refuses %s %j with %s on %s', (type, isReply, input, code, field) => {
    expect(checkDraft(type, isReply, input)).toMatchObject({ ok: false, code, field });
  });

  it('checks in order: empty before too long before placeholder before link', () => {
    expect(checkDraft('email', false, { subject: '[x]', body: '' })).toMatchObject({ code: 'draft_empty' });
    expect(checkDraft('linkedin_connection', false, { note: `[x] https://a.com ${'y'.repeat(LINKEDIN_NOTE_MAX)}` })).toMatchObject({ code: 'draft_too_long' });
    expect(checkDraft('linkedin_connection', false, { note: '[x] https://a.com' })).toMatchObject({ code: 'draft_placeholder' });
  });

  it.each([
    ['a link in an email body', 'email', { subject: 's', body: 'Details at https://acme.example/pricing' }],
    ['a link in a LinkedIn message', 'linkedin_message', { body: 'Here is the deck: https://acme.example/deck' }],
    ['a sentence with a full stop and no domain', 'linkedin_connection', { note: 'Great talk at the summit. Keen to connect.' }],
    ['exactly the note limit', 'linkedin_connection', { note: 'x'.repeat(LINKEDIN_NOTE_MAX) }],
    ['exactly the message limit', 'linkedin_message', { body: 'x'.repeat(LINKEDIN_MESSAGE_MAX) }],
    ['the note limit in characters, emoji counting one each', 'linkedin_connection', { note: `${'x'.repeat(LINKEDIN_NOTE_MAX - 2)}\u{1F44B}\u{1F600}` }],
    ['parentheses are not placeholders', 'linkedin_message', { body: 'A short call (20 minutes) next week?' }],
  ] as const)('allows %s', (_name, type, input) => {
    expect(checkDraft(type, false, input).ok).toBe(true);
  });
});

describe('mergeDraftEdit', () => {
  const draft = { subject: 'Chairs', body: 'Hi Sarah, a call?' };

  it('keeps the fields the edit leaves out, replaces the ones it gives (an empty string included)', () => {
    expect(mergeDraftEdit(draft, undefined)).toBe(draft);
    expect(mergeDraftEdit(draft, { subject: 'Edited' })).toEqual({ subject: 'Edited', body: 'Hi Sarah, a call?' });
    expect(mergeDraftEdit(draft, { body: 'New body', subject: undefined })).toEqual({ subject: 'Chairs', body: 'New body' });
    expect(mergeDraftEdit(draft, { body: '' })).toEqual({ subject: 'Chairs', body: '' });
    expect(mergeDraftEdit(null, { note: 'Hi' })).toEqual({ note: 'Hi' });
    expect(draft).toEqual({ subject: 'Chairs', body: 'Hi Sarah, a call?' });
  });

  it('still fails the draft check when the edit empties a required field', () => {
    expect(checkDraft('email', false, mergeDraftEdit(draft, { subject: 'Edited' }))).toEqual({ ok: true, draft: { subject: 'Edited', body: 'Hi Sarah, a call?' } });
    expect(checkDraft('email', false, mergeDraftEdit(draft, { body: '' }))).toMatchObject({ ok: false, code: 'draft_empty', field: 'body' });
  });
});
