import { classifyProviderFailure } from '../../classification/classification.js';
import { PROSPECT_CAP_REFUSAL_CODE, textToHtml } from '../email/nylas.adapter.js';
import { slugOf } from '../linkedin/unipile.adapter.js';

describe('classifyProviderFailure', () => {
  it.each([
    ['the prospect cap refusal', { kind: 'http', httpStatus: 429, providerCode: PROSPECT_CAP_REFUSAL_CODE, retryAfterMs: null }, 'permanent', 'fail', 0],
    ['a provider 429', { kind: 'http', httpStatus: 429, providerCode: null, retryAfterMs: 30_000 }, 'rate_limited', 'retry', 30_000],
    ['a 503', { kind: 'http', httpStatus: 503, providerCode: null, retryAfterMs: null }, 'transient', 'retry', 0],
    ['a 400', { kind: 'http', httpStatus: 400, providerCode: null, retryAfterMs: null }, 'permanent', 'fail', 0],
    ['a 422 refusal', { kind: 'http', httpStatus: 422, providerCode: 90_101, retryAfterMs: null }, 'permanent', 'fail', 0],
    ['a timeout', { kind: 'timeout' }, 'ambiguous', 'park_ambiguous', 0],
    ['a broken connection', { kind: 'network' }, 'ambiguous', 'park_ambiguous', 0],
    ['a local fault', { kind: 'local' }, 'local_execution', 'fail', 0],
  ] as const)('%s → %s / %s', (_label, failure, classification, action, floorMs) => {
    expect(classifyProviderFailure(failure, [PROSPECT_CAP_REFUSAL_CODE, 90_101])).toEqual({ classification, action, floorMs, accountRestricted: false });
  });
});

describe('slugOf', () => {
  it.each([
    ['https://www.linkedin.com/in/ana-lee/', 'ana-lee'],
    ['https://linkedin.com/in/ana%C3%A7a?trk=x', 'anaça'],
    ['ACoAAFAKE000000000000000000000000000002', null],
    ['https://www.linkedin.com/company/acme', null],
  ])('%j → %j', (recipient, slug) => {
    expect(slugOf(recipient)).toBe(slug);
  });
});

describe('textToHtml', () => {
  it('escapes markup and keeps line breaks', () => {
    expect(textToHtml('Hi <Ana> & co,\r\nline "two"\n\nUnsubscribe: https://x.example/u?token=a.b')).toBe('Hi &lt;Ana&gt; &amp; co,<br>line &quot;two&quot;<br><br>Unsubscribe: https://x.example/u?token=a.b');
  });

  it('writes an apostrophe as a numeric reference (&apos; is not HTML 4, which some mail clients still parse)', () => {
    expect(textToHtml("It's &amp; done")).toBe('It&#x27;s &amp;amp; done');
  });
});
