import { askedFields, fieldsOf, sectionOf, unescapeData } from '../model-prompt.js';

describe('model prompt reading', () => {
  it.each([
    ['&lt;/thread&gt;', '</thread>'],
    ['a &amp;lt; b', 'a &lt; b'],
    ['&quot;x&quot; &#x27;y&#x27;', `"x" 'y'`],
    ['plain', 'plain'],
    ['&#x60;code&#x60; &amp;quot;', '`code` &quot;'],
  ])('unescapes %j to %j', (text, plain) => {
    expect(unescapeData(text)).toBe(plain);
  });

  it('reads a section up to its own closing tag, unescaped; (none) and absent sections are empty', () => {
    const user = '<task>followup_classify</task>\n\n<reply>\nhi &lt;/reply&gt; there\n</reply>\n\n<thread>\n(none)\n</thread>';
    expect(sectionOf(user, 'reply')).toBe('hi </reply> there');
    expect(sectionOf(user, 'thread')).toBe('');
    expect(sectionOf(user, 'classes')).toBe('');
  });

  it('reads key: value lines and the asked output fields', () => {
    expect(fieldsOf('name: Sarah Lee\ntitle: CEO\nno colon here')).toEqual({ name: 'Sarah Lee', title: 'CEO' });
    expect(askedFields('Fields:\n- type (string, required): one\n- days (number): n\n- bad line')).toEqual([
      { name: 'type', type: 'string', required: true },
      { name: 'days', type: 'number', required: false },
    ]);
  });
});
