import { createHmac } from 'node:crypto';
import { isValidUnipileSecret } from '../../unipile/unipile-webhook.controller.js';
import { htmlToText, isValidNylasSignature } from '../nylas-signature.js';

describe('isValidNylasSignature', () => {
  const body = Buffer.from('{"type":"message.created","data":{"object":{"id":"1"}}}');
  const good = createHmac('sha256', 'secret').update(body).digest('hex');

  it.each([
    ['the hex HMAC of the raw body', good, true],
    ['the same in upper case', good.toUpperCase(), true],
    ['with surrounding spaces', ` ${good} `, true],
    ['signed with another secret', createHmac('sha256', 'other').update(body).digest('hex'), false],
    ['of another body', createHmac('sha256', 'secret').update(Buffer.from('{}')).digest('hex'), false],
    ['Meta-style sha256= prefix', `sha256=${good}`, false],
    ['truncated', good.slice(0, 63), false],
    ['missing', undefined, false],
    ['repeated header', [good, good], false],
  ])('%s → %s', (_label, header, expected) => {
    expect(isValidNylasSignature(body, header as string | string[] | undefined, 'secret')).toBe(expected);
  });

  it('refuses when the raw body was not kept', () => {
    expect(isValidNylasSignature(undefined, good, 'secret')).toBe(false);
  });
});

describe('isValidUnipileSecret', () => {
  it.each([
    ['the secret', 'shh', true],
    ['another value', 'shh!', false],
    ['empty', '', false],
    ['missing', undefined, false],
  ])('%s → %s', (_label, header, expected) => {
    expect(isValidUnipileSecret(header, 'shh')).toBe(expected);
  });
});

describe('htmlToText', () => {
  it.each([
    ['<div dir="ltr">Test with attachments</div>\r\n', 'Test with attachments'],
    ['Yes,<br>Tuesday<br/>works', 'Yes,\nTuesday\nworks'],
    ['<p>One</p><p>Two &amp; three</p>', 'One\nTwo & three'],
    ['&lt;b&gt; is bold &#39;ok&#39; &quot;q&quot;&nbsp;x', '<b> is bold \'ok\' "q" x'],
    ['<style>.a{color:red}</style><b>Hi</b>', 'Hi'],
    ['N&atilde;o quero &#x27;mais&#x27; &amp;amp; &#233;', "Não quero 'mais' &amp; é"],
    ['', ''],
  ])('%j → %j', (html, text) => {
    expect(htmlToText(html)).toBe(text);
  });
});
