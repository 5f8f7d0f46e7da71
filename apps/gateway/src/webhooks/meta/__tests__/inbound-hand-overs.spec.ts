import { type InboundItem, inboundHandOvers } from '../meta-webhook.service.js';

/** One webhook's messages (ids) from `from`, with its `contacts` naming the sender `name`. */
const webhook = (from: string, name: string | undefined, ...ids: string[]): InboundItem[] => {
  const contacts = [{ wa_id: from, ...(name === undefined ? {} : { profile: { name } }) }];
  return ids.map((id) => ({ message: { from, id, timestamp: '1', type: 'text' }, contacts }));
};
const ids = (handOvers: InboundItem[][]) => handOvers.map((h) => h.map((i) => i.message.id));

describe(inboundHandOvers.name, () => {
  it('keeps a group whole when every sender has one name in it', () => {
    expect(ids(inboundHandOvers([...webhook('551', 'Ana', 'a1', 'a2'), ...webhook('552', 'Bia', 'b1'), ...webhook('551', 'Ana', 'a3')]))).toEqual([['a1', 'a2', 'b1', 'a3']]);
  });

  it('starts a new hand-over, in order, where a sender comes with another name (or none), so each message keeps its own webhook’s name', () => {
    const handOvers = inboundHandOvers([...webhook('551', 'First', 'a1'), ...webhook('552', 'Bia', 'b1'), ...webhook('551', 'Second', 'a2'), ...webhook('551', undefined, 'a3')]);
    expect(ids(handOvers)).toEqual([['a1', 'b1'], ['a2'], ['a3']]);
    expect(handOvers.map((h) => h.flatMap((i) => i.contacts.map((c) => c.profile?.name ?? null)))).toEqual([['First', 'Bia'], ['Second'], [null]]);
  });

  it('answers no hand-over for no messages', () => {
    expect(inboundHandOvers([])).toEqual([]);
  });
});
