import { namedNumbers } from '../number-chain.js';

const [E, F, L] = ['e0000000-0000-4000-8000-000000000001', 'f0000000-0000-4000-8000-000000000002', 'a0000000-0000-4000-8000-000000000003'];

describe('namedNumbers', () => {
  it.each([
    ['all three, in the seed order', { enrollmentSenderId: E, flowSender: { mode: 'fixed' as const, sender_id: F }, lastConversationSenderId: L }, [E, F, L]],
    ['no enrollment number', { enrollmentSenderId: null, flowSender: { mode: 'fixed' as const, sender_id: F }, lastConversationSenderId: L }, [F, L]],
    ['a sender_id without mode fixed is not the flow’s number', { enrollmentSenderId: null, flowSender: { mode: 'default' as const, sender_id: F }, lastConversationSenderId: L }, [L]],
    ['no flow sender settings', { enrollmentSenderId: E, flowSender: undefined, lastConversationSenderId: null }, [E]],
    ['one number named twice is tried once', { enrollmentSenderId: L, flowSender: { mode: 'fixed' as const, sender_id: F }, lastConversationSenderId: L }, [L, F]],
    ['nothing named', { enrollmentSenderId: null, flowSender: { mode: 'last_conversation' as const }, lastConversationSenderId: null }, []],
  ])('%s', (_name, named, expected) => {
    expect(namedNumbers(named)).toEqual(expected);
  });
});
