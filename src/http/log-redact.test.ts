import { expect, test } from 'vitest';
import { redactUrl, requestSerializer } from './log-redact';

test('the signature of a signed URL never reaches the log; the rest of the URL does', () => {
  expect(redactUrl('/v1/blobs/b_0123456789abcdef/download?agent_id=a1&expires=17&signature=deadbeef'))
    .toBe('/v1/blobs/b_0123456789abcdef/download?agent_id=a1&expires=17&signature=[redacted]');
  expect(redactUrl('/x?Signature=abc&b=1')).toBe('/x?Signature=[redacted]&b=1');
  expect(redactUrl('/v1/memory/k')).toBe('/v1/memory/k');
  expect(requestSerializer({ method: 'GET', url: '/d?signature=s', hostname: 'h', ip: '1.2.3.4', socket: { remotePort: 9 } }))
    .toEqual({ method: 'GET', url: '/d?signature=[redacted]', host: 'h', remoteAddress: '1.2.3.4', remotePort: 9 });
});
