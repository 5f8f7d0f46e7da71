import { isOptOut, normalizeText, stripQuotedText } from '../index.js';

describe('isOptOut', () => {
  it.each([
    ['stop'],
    ['STOP'],
    ['Stop.'],
    ['  stop!!! '],
    ['Stop please'],
    ['unsubscribe'],
    ['Please unsubscribe me from this'],
    ['Remove me from your list'],
    ['stop emailing me'],
    ['Not interested, please stop'],
    ["don't contact me again"],
    ['Take me off your list'],
    ['PARE'],
    ['pare.'],
    ['Parem'],
    ['Sair'],
    ['SAIR'],
    ['Não quero mais receber essas mensagens'],
    ['nao quero mais receber'],
    ['Por favor, me descadastre'],
    ['pare de me enviar mensagens'],
    ['Parem de me mandar isso!!'],
    ['Remova meu número da lista'],
    ['me tire da lista por favor'],
    ['Não me mande mais nada'],
    ['baja'],
    ['Quiero darme de baja'],
    ['No quiero recibir más mensajes'],
    ['Dejen de enviarme publicidad'],
    ['Sácame de la lista'],
    ['no me envíes más'],
    ['stop\n\nOn Mon, Jan 5, 2026 at 10:00 Ana Example <ana@example.com> wrote:\n> Hello, are you interested?'],
    ['Pare\n\nEm seg., 5 de jan. de 2026 às 10:00, Ana <ana@example.com> escreveu:\n> Olá'],
  ])('opts out on %j', (text) => {
    expect(isOptOut(text)).toBe(true);
  });

  it.each([
    [''],
    [null],
    ['Does it come in another color?'],
    ["I can't stop laughing at this"],
    ['Where is the bus stop?'],
    ['Stop by the store tomorrow and ask for Ana'],
    ['Não pare de me enviar novidades!'],
    ['Para quando é a entrega?'],
    ['Vou sair de casa às 10'],
    ['Quero cancelar meu pedido'],
    ['No dejen de enviarme ofertas'],
    ['Sounds good, thanks'],
    // The quoted unsubscribe line of our own email must not count (seed 003: quoted text stripped first).
    ['Sounds interesting, tell me more\n\nOn Tue, Ana wrote:\n> Unsubscribe: https://example.com/u/abc'],
    ['Yes please\n> stop'],
  ])('does not opt out on %j', (text) => {
    expect(isOptOut(text)).toBe(false);
  });
});

describe('stripQuotedText', () => {
  it('keeps the new text and drops the quoted reply and ">" lines', () => {
    expect(stripQuotedText('Thanks!\n> earlier\nOn Mon, 5 Jan 2026, Ana wrote:\n> more\nsignature')).toBe('Thanks!');
  });

  it('recognises a quote header wrapped over two lines', () => {
    expect(stripQuotedText('ok\nOn Mon, 5 Jan 2026 at 10:00, Ana Example <ana@example.com>\nwrote:\n> x')).toBe('ok');
  });
});

describe('normalizeText', () => {
  it.each([
    ['Não QUERO', 'nao quero'],
    ['  Sácame   de la\tlista ', 'sacame de la lista'],
    ['Ação', 'acao'],
  ])('%j → %j', (input, output) => {
    expect(normalizeText(input)).toBe(output);
  });
});
