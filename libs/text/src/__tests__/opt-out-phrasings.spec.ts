import { isOptOut } from '../index.js';

/**
 * The opt-out phrase rule on ordinary phrasings: courtesy, punctuation, case, accents and emoji
 * around a stop command; list phrasings in Portuguese and Spanish; carrier keywords as the whole
 * message; and sentences that merely contain "stop", "end", "cancel", "quit" or "para".
 */
describe('isOptOut (ordinary phrasings)', () => {
  describe('opts out', () => {
    it.each([
      // carrier keywords as the whole message
      ['STOP'],
      ['STOPALL'],
      ['STOP ALL'],
      ['UNSUBSCRIBE'],
      ['CANCEL'],
      ['END'],
      ['QUIT'],
      ['OPT OUT'],
      ['OPTOUT'],
      ['Opt-out'],
      ['REVOKE'],
      ['end.'],
      ['Quit!'],
      ['cancel please'],
      // courtesy, punctuation, case, emoji
      ['stop, thanks'],
      ['STOP!!!'],
      ['stop pls 🙏'],
      ['Stop. Thank you'],
      ['Stop please, thank you very much'],
      ['Please stop.'],
      ['🛑 STOP 🛑'],
      ['"STOP"'],
      ['stop stop stop'],
      ['Stop! Stop!'],
      ['Hi, stop please'],
      ['ok stop'],
      ['No thanks, stop'],
      ['No. Stop.'],
      ['Not interested. Stop'],
      ['not interested, please stop'],
      ['Stop now'],
      ['STOP\n\nSent from my iPhone'],
      ['Stop\n-- \nAna Silva\nAcme Ltd'],
      ['Hi,\n\nPlease stop.\n\nBest,\nAna Silva\nHead of Sales, Acme'],
      // phrases anywhere
      ['Please stop texting me'],
      ['No, stop messaging me'],
      ['Stop sending me these messages'],
      ['stop sending these texts please'],
      ['How do I unsubscribe?'],
      ['Take me off your mailing list'],
      ['take me off the list, thanks'],
      ['Please remove my number from your list'],
      ['Delete my number'],
      ['No more messages please'],
      ['Leave me alone'],
      ["Don't text me again"],
      ['Do not contact me anymore.'],
      ['Please opt me out'],
      ['I want to opt out'],
    ])('English %j', (text) => {
      expect(isOptOut(text)).toBe(true);
    });

    it.each([
      ['por favor, parem'],
      ['pare, obrigado'],
      ['Pare por favor 🙏'],
      ['PAREM!!'],
      ['Para'],
      ['parar.'],
      ['Para, por favor'],
      ['Não, pare'],
      ['Sair'],
      ['Quero sair'],
      ['me tira da lista'],
      ['Me tirem dessa lista!'],
      ['me tire da lista por favor'],
      ['Tirem-me da lista'],
      ['Por favor me remova da sua lista'],
      ['Pode me remover?'],
      ['remove meu número da lista'],
      ['Tira meu nome dessa lista de transmissão'],
      ['não quero mais mensagens'],
      ['Não quero mais receber'],
      ['Não quero receber mais e-mails, obrigado'],
      ['sair da lista'],
      ['Quero sair dessa lista'],
      ['Como faço para sair da lista?'],
      ['Me descadastra, por favor'],
      ['Quero me descadastrar'],
      ['Não me mandem mais mensagens'],
      ['Nunca mais me mande isso'],
      ['Para de me mandar mensagem'],
      ['Parem de me ligar, obrigada'],
      ['Chega de mensagens!'],
      ['Não tenho interesse, pare'],
      ['Bom dia, parem por favor'],
      ['Cancelar a inscrição'],
      ['Parem\n\nAtenciosamente,\nJoão Souza\nDiretor'],
      ['Não tenho interesse pare de me enviar isso'],
    ])('Portuguese %j', (text) => {
      expect(isOptOut(text)).toBe(true);
    });

    it.each([
      ['quiero darme de baja'],
      ['sácame de la lista'],
      ['no me escriban más'],
      ['Baja'],
      ['BAJA, gracias'],
      ['Alto'],
      ['Ya basta'],
      ['Paren, por favor'],
      ['Por favor, denme de baja'],
      ['Quítenme de su lista'],
      ['Bórrame de esta lista, gracias'],
      ['Eliminen mi número de la lista'],
      ['No quiero recibir más correos'],
      ['Ya no quiero recibir mensajes'],
      ['No me manden más mensajes'],
      ['Dejen de escribirme'],
      ['Deja de enviarme mensajes, gracias'],
      ['No más mensajes'],
      ['No me interesa, no me contacten más'],
      ['Cancelar mi suscripción'],
      ['Quiero desuscribirme'],
    ])('Spanish %j', (text) => {
      expect(isOptOut(text)).toBe(true);
    });
  });

  describe('does not opt out', () => {
    it.each([
      ["I can't stop laughing"],
      ['Can I cancel my appointment?'],
      ['Please cancel the order from Tuesday'],
      ['See you at the end of the month'],
      ['The end.'],
      ['End of story: we are buying'],
      ["don't stop sending me updates"],
      ["Please don't ever stop emailing me"],
      ['I quit my job last week'],
      ['Quit worrying, it is fine'],
      ['Where is the bus stop?'],
      ["I'll stop by at 3"],
      ['Can we stop the project for a month?'],
      ['We had to stop sending invoices by mail'],
      ['What does STOP mean?'],
      ['Stop me if you have heard this one'],
      ['Non-stop meetings, ping me Friday'],
      ['The cancel button does not work'],
      ['How do I end the call?'],
      ['It never ends with you haha'],
      ['Not interested.'],
      ['No thanks'],
      ['Thanks!'],
      ['OK'],
      ['No'],
      ['Please keep sending me updates'],
      ['Send me the unsubscribed list stats'],
      ['Remove the armrests from the quote'],
      ['🛑'],
      ['Stop. Who is this?'],
      ['Sounds good, end of day works'],
      ['Thanks\nWe will end the trial on Friday'],
      ['We should stop sending the invoices to the old address'],
      ['I changed phones, delete my number and save this one'],
    ])('English %j', (text) => {
      expect(isOptOut(text)).toBe(false);
    });

    it.each([
      ['não pare de me mandar'],
      ['Não pare de me enviar novidades!'],
      ['não para de chover aqui'],
      ['para quando é a entrega?'],
      ['Para mim funciona na quinta'],
      ['Para, digo, pra amanhã está ótimo'],
      ['Vamos parar o projeto só até março'],
      ['Vou sair de casa às 10'],
      ['Sair cedo hoje?'],
      ['Não quero sair da lista'],
      ['Quero cancelar meu pedido'],
      ['Me tira uma dúvida: qual o preço?'],
      ['Tire o item 3 da lista de compras'],
      ['Remova meu email antigo e use o novo'],
      ['Não quero receber o boleto pelo correio'],
      ['Não quero mais nada, obrigado'],
      ['Não, obrigado'],
      ['Não tenho interesse'],
      ['Pare no portão 2'],
      ['Chega amanhã?'],
      ['Obrigado!'],
      ['Fim de semana é melhor'],
      ['Não quero me descadastrar, só mudar o horário'],
      ['Não quero que vocês parem de me mandar novidades'],
      ['Minha impressora para de enviar os arquivos'],
      ['Quero cancelar minha inscrição no curso de inglês'],
    ])('Portuguese %j', (text) => {
      expect(isOptOut(text)).toBe(false);
    });

    it.each([
      ['No dejes de escribirme cuando tengas precios'],
      ['No dejen de enviarme ofertas'],
      ['¿Para cuándo está listo?'],
      ['Para mí está bien el martes'],
      ['La parada del autobús está cerca'],
      ['Quiero cancelar mi cita'],
      ['Al final del mes'],
      ['No quiero darme de baja'],
      ['Sácame de dudas: ¿cuánto cuesta?'],
      ['Alto ahí, ¿qué precio tiene?'],
      ['Basta con que me llames mañana'],
      ['No me interesa'],
      ['Gracias'],
      ['No, gracias'],
      ['Déjame pensarlo'],
      ['Quita el IVA de la lista de precios'],
      ['Quiero dar de baja mi pedido'],
      ['Quiero cancelar mi suscripción al gimnasio'],
    ])('Spanish %j', (text) => {
      expect(isOptOut(text)).toBe(false);
    });
  });
});
