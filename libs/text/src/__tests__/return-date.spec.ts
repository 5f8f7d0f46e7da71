import { findReturnDate } from '../index.js';

/** Tuesday 1 December 2026, 10:00 UTC: the day the auto-replies below arrive. */
const RECEIVED = new Date('2026-12-01T10:00:00Z');

describe('findReturnDate (out-of-office return dates, chrono-node EN/PT/ES/DE/FR)', () => {
  it.each([
    // English
    ['en, weekday and day month', 'I am out of the office and back on Monday 7 December.', '2026-12-07'],
    ['en, month day', 'Thanks for your email. I will return on December 9 and reply then.', '2026-12-09'],
    ['en, until a weekday', 'I am away until Monday, with limited access to email.', '2026-12-07'],
    ['en, a range counts by its end', 'I am on leave from 2 December to 11 December.', '2026-12-11'],
    ['en, numeric is day first', 'Out of office until 10/12.', '2026-12-10'],
    ['en, a past date without a year is next year', 'Back on 5 November.', '2027-11-05'],
    // Portuguese
    ['pt, numeric day/month', 'Estou de férias, de volta em 10/12.', '2026-12-10'],
    ['pt, day de month', 'Retorno no dia 14 de dezembro.', '2026-12-14'],
    ['pt, weekday', 'Volto na segunda-feira.', '2026-12-07'],
    ['pt, ambiguous 03/12 is the 3rd of December', 'Ausente até 03/12.', '2026-12-03'],
    // Spanish
    ['es, day de month', 'Estaré de vuelta el 9 de diciembre.', '2026-12-09'],
    ['es, numeric day/month', 'Regreso el 11/12, gracias.', '2026-12-11'],
    ['es, weekday', 'Vuelvo el lunes.', '2026-12-07'],
    // German
    ['de, short date with a closing dot', 'Ich bin zurück am 8.12. und beantworte dann Ihre Mail.', '2026-12-08'],
    ['de, day. month name', 'Ab dem 14. Dezember bin ich wieder im Büro.', '2026-12-14'],
    ['de, full date', 'Abwesend bis 04.12.2026.', '2026-12-04'],
    ['de, weekday', 'Ich bin ab Montag wieder da.', '2026-12-07'],
    // French
    ['fr, day month', 'Je serai de retour le 10 décembre.', '2026-12-10'],
    ['fr, numeric day/month', "Je suis absent jusqu'au 15/12 inclus.", '2026-12-15'],
    ['fr, weekday and day month', 'De retour le jeudi 3 décembre.', '2026-12-03'],
  ])('%s: %j → %s', (_label, text, date) => {
    expect(findReturnDate(text, { receivedAt: RECEIVED, timeZone: 'Europe/Lisbon' })?.date).toBe(date);
  });

  it.each([
    ['en, no date', 'I am away with limited access to email.'],
    ['pt, no date', 'Estou de férias e responderei assim que possível.'],
    ['es, no date', 'Estoy fuera de la oficina.'],
    ['de, no date', 'Ich bin derzeit nicht im Büro.'],
    ['fr, no date', "Je suis absent en ce moment et n'ai pas accès à mes e-mails."],
    ['only a time, no day', 'I will check email after 3pm.'],
    ['a decimal number is not a German date', 'Die Version 8.12 ist verfügbar.'],
    ['empty', ''],
  ])('%s: %j → no date', (_label, text) => {
    expect(findReturnDate(text, { receivedAt: RECEIVED, timeZone: 'Europe/Berlin' })).toBeNull();
  });

  it("reads only the new text: a date in the quoted part is not the writer's", () => {
    const text = 'I am away with limited access to email.\n\nOn Mon, 30 Nov 2026 Ana <ana@ours.example> wrote:\n> Can we talk on 15 December?';
    expect(findReturnDate(text, { receivedAt: RECEIVED, timeZone: 'UTC' })).toBeNull();
  });

  it('counts "tomorrow" from the received time in the writer\'s zone (late evening in São Paulo is already the next day in UTC)', () => {
    const receivedAt = new Date('2026-12-02T01:30:00Z'); // 1 December, 22:30 in São Paulo
    expect(findReturnDate('Volto amanhã.', { receivedAt, timeZone: 'America/Sao_Paulo' })?.date).toBe('2026-12-02');
    expect(findReturnDate('Volto amanhã.', { receivedAt, timeZone: 'UTC' })?.date).toBe('2026-12-03');
  });

  it('keeps the earliest date after today: the day the absence began and the day back are both named', () => {
    expect(findReturnDate('Since 30 November I am on leave; back on 9 December.', { receivedAt: RECEIVED })?.date).toBe('2026-12-09');
  });
});
