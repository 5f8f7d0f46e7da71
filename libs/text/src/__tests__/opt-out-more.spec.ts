import { isOptOut } from '../index.js';

/** More of both sides of the shared phrase rule (Portuguese and Spanish intent, no false positives on "stop"). */
describe('isOptOut (more languages and near misses)', () => {
  it.each([
    ['Unsubscribe'],
    ['please REMOVE ME'],
    ['Stop emailing me, thanks'],
    ['not interested, please stop.'],
    ['STOP.'],
    ['stop!'],
    ['Parar'],
    ['Não tenho interesse, pare de me enviar mensagens'],
    ['Quero cancelar minha inscrição'],
    ['por favor me remova da lista'],
    ['não quero receber mais e-mails'],
    ['Darme de baja, por favor'],
    ['Por favor, dejen de escribirme'],
    ['no me escriban más'],
    ['Quítame de tu lista'],
    ['Cancelar mi suscripción'],
    ['NO QUIERO RECIBIR MAS CORREOS'],
  ])('opts out on %j', (text) => {
    expect(isOptOut(text)).toBe(true);
  });

  it.each([
    ["Please don't stop sending me updates"],
    ['We had to stop the project for a month, can we talk in March?'],
    ['Stop me if you have heard this one: we need 40 chairs'],
    ['Non-stop meetings this week, ping me Friday'],
    ['Vamos parar o projeto só até março'],
    ['Para mim funciona na quinta'],
    ['La parada del autobús está cerca'],
    ['No dejes de escribirme cuando tengas precios'],
    ['Remove the armrests from the quote, please'],
    ['Can you send me the unsubscribed list stats?'],
    ['Interested! Please send pricing'],
  ])('does not opt out on %j', (text) => {
    expect(isOptOut(text)).toBe(false);
  });
});
