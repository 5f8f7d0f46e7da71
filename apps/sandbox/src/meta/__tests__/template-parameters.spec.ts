import { templateParameterRefusal } from '../whatsapp-graph.js';

const send = (...texts: string[]) => ({ messaging_product: 'whatsapp', to: '5511987654321', type: 'template', template: { name: 'order_update', language: { code: 'pt_BR' }, components: [{ type: 'body', parameters: texts.map((text) => ({ type: 'text', text })) }] } });

describe("the sandbox's Meta refuses template text parameters as Graph does", () => {
  it.each([[send('Ana')], [send('Ana    Souza', 'x')], [{ messaging_product: 'whatsapp', type: 'text', text: { body: 'a\nb' } }]])('accepts %j', (body) => {
    expect(templateParameterRefusal(body)).toBeNull();
  });

  it.each([
    [send('Ana', ''), 131008],
    [send('Ana\nSouza'), 132018],
    [send('Ana\tSouza'), 132018],
    [send('Ana     Souza'), 132018],
    [{ type: 'template', template: { components: [{ type: 'carousel', cards: [{ card_index: 0, components: [{ type: 'body', parameters: [{ type: 'text', text: 'a\tb' }] }] }] }] } }, 132018],
  ])('refuses %j with %d', (body, code) => {
    expect(templateParameterRefusal(body)?.code).toBe(code);
  });
});
