import { amqpMessageId } from '../bus.js';

describe('amqpMessageId', () => {
  it('keeps an event id AMQP can carry as it is', () => {
    expect(amqpMessageId('messaging.message.received:1f0e')).toBe('messaging.message.received:1f0e');
    expect(amqpMessageId('x'.repeat(255))).toBe('x'.repeat(255));
  });

  it('hashes a longer one into 255 characters or fewer, the same for the same id and different for another', () => {
    const long = `messaging.read_receipt:org:wamid.${'y'.repeat(4000)}`;
    const id = amqpMessageId(long);
    expect(id).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(amqpMessageId(long)).toBe(id);
    expect(amqpMessageId(`${long}z`)).not.toBe(id);
  });
});
