import { type InboundFacts, judgeInbound } from '../index.js';

const oooHeader = [{ name: 'Auto-Submitted', value: 'auto-replied' }];
const footer = '\n\nTo stop these notices, unsubscribe at https://mail.example/u';

describe('judgeInbound', () => {
  describe('an auto-reply is never an opt-out and never a reply (seed 003 §4.7)', () => {
    it.each<[string, Partial<InboundFacts>]>([
      ['Auto-Submitted header, English', { headers: oooHeader, subject: 'Re: Chairs for Acme', text: `I am away until Monday.${footer}` }],
      ['X-Autoreply header, Portuguese', { headers: [{ name: 'X-Autoreply', value: 'yes' }], subject: 'Re: Cadeiras', text: 'Estou de férias. Para sair da lista: descadastrar' }],
      ['Precedence: auto_reply, Spanish', { headers: [{ name: 'Precedence', value: 'auto_reply' }], subject: 'Re: Sillas', text: 'Estoy fuera. Para darme de baja escriba a ...' }],
      ['subject "Automatic reply:", English', { subject: 'Automatic reply: Chairs for Acme', text: `Back on the 3rd.${footer}` }],
      ['subject "Resposta automática:", Portuguese', { subject: 'Resposta automática: Cadeiras', text: 'Volto dia 3. unsubscribe' }],
      ['subject "Respuesta automática:", Spanish', { subject: 'Respuesta automática: Sillas', text: 'Vuelvo el lunes. Unsubscribe' }],
      ['subject "Réponse automatique", French', { subject: 'Réponse automatique : Chaises', text: 'Absent. unsubscribe' }],
      ['subject "Abwesenheitsnotiz", German', { subject: 'Abwesenheitsnotiz: Stühle', text: 'STOP' }],
      ['subject rule holds when the headers were unreadable', { subject: 'Out of Office: Chairs', headersUnreadable: true, text: 'unsubscribe' }],
    ])('%s: auto-reply only', (_label, facts) => {
      expect(judgeInbound({ channel: 'email', text: null, ...facts })).toEqual({ autoReply: true, optOut: false, reply: false, certain: true });
    });
  });

  describe('an opt-out is not a reply', () => {
    it.each<[string, InboundFacts]>([
      ['email phrase', { channel: 'email', subject: 'Re: Chairs', text: 'Please unsubscribe me from this.' }],
      ['email with Auto-Submitted: no', { channel: 'email', subject: 'Re: Chairs', headers: [{ name: 'Auto-Submitted', value: 'no' }], text: 'remove me' }],
      ['WhatsApp STOP', { channel: 'whatsapp', text: 'STOP' }],
      ['LinkedIn, Portuguese', { channel: 'linkedin', text: 'Não quero mais receber mensagens' }],
      ['LinkedIn with an out-of-office-looking subject (LinkedIn has no auto-reply rule)', { channel: 'linkedin', subject: 'Out of office', text: 'unsubscribe' }],
    ])('%s', (_label, facts) => {
      expect(judgeInbound(facts)).toEqual({ autoReply: false, optOut: true, reply: false, certain: true });
    });
  });

  describe('anything else is a reply', () => {
    it.each<[string, InboundFacts]>([
      ['email answer', { channel: 'email', subject: 'Re: Chairs', text: 'Yes, Tuesday works.' }],
      ['email answer quoting our unsubscribe line', { channel: 'email', subject: 'Re: Chairs', text: 'Sounds good.\n\nOn Mon, Ana wrote:\n> Unsubscribe: https://x.example/u' }],
      ['WhatsApp text with "stop" in a sentence', { channel: 'whatsapp', text: "I can't stop thinking about that chair" }],
      ['WhatsApp caption that says STOP (a caption is not a command)', { channel: 'whatsapp', text: 'STOP', textMayOptOut: false }],
      ['WhatsApp image without text', { channel: 'whatsapp', text: null }],
    ])('%s', (_label, facts) => {
      expect(judgeInbound(facts)).toEqual({ autoReply: false, optOut: false, reply: true, certain: true });
    });
  });

  describe('an email whose headers could not be read', () => {
    it('is a reply, marked uncertain', () => {
      expect(judgeInbound({ channel: 'email', subject: 'Re: Chairs', text: 'I am away until Monday.', headersUnreadable: true })).toEqual({ autoReply: false, optOut: false, reply: true, certain: false });
    });

    it('still honours an opt-out phrase, marked uncertain', () => {
      expect(judgeInbound({ channel: 'email', subject: 'Re: Chairs', text: 'unsubscribe', headersUnreadable: true })).toEqual({ autoReply: false, optOut: true, reply: false, certain: false });
    });

    it('is certain on a channel without headers', () => {
      expect(judgeInbound({ channel: 'linkedin', text: 'hi', headersUnreadable: true }).certain).toBe(true);
    });
  });
});
