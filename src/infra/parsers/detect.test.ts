import { describe, expect, test } from 'vitest';
import { charsetOf, describeBytes, detectParseKind, looksBinary } from './detect';
import { garbage, pngLike } from '../../../test/fixtures/documents';

describe('detectParseKind', () => {
  test.each([
    ['application/pdf', 'pdf'],
    ['Application/PDF', 'pdf'],
    ['application/pdf; name="report.pdf"', 'pdf'],
    ['application/vnd.openxmlformats-officedocument.wordprocessingml.document', 'docx'],
    ['application/vnd.openxmlformats-officedocument.spreadsheetml.sheet; charset=binary', 'xlsx'],
    ['text/csv', 'csv'],
    ['text/csv; charset=utf-8', 'csv'],
    ['TEXT/CSV;charset=UTF-8', 'csv'],
    ['application/csv', 'csv'],
    ['text/tab-separated-values', 'csv'],
  ])('%s → %s', (contentType, kind) => {
    expect(detectParseKind(contentType)).toBe(kind);
  });

  test.each(['', 'text/plain', 'image/png', 'application/msword', 'application/vnd.ms-excel', 'application/zip', 'csv'])('%s is not parseable', (contentType) => {
    expect(detectParseKind(contentType)).toBeUndefined();
  });

  test('undefined and null content types', () => {
    expect(detectParseKind(undefined)).toBeUndefined();
    expect(detectParseKind(null)).toBeUndefined();
  });
});

test('charsetOf reads the charset parameter', () => {
  expect(charsetOf('text/csv; charset="ISO-8859-1"')).toBe('iso-8859-1');
  expect(charsetOf('text/csv;charset=utf-8')).toBe('utf-8');
  expect(charsetOf('text/csv')).toBeUndefined();
});

test('describeBytes names what a file looks like', () => {
  expect(describeBytes(Buffer.from('%PDF-1.7\n'))).toBe('a PDF document');
  expect(describeBytes(Buffer.from([0x50, 0x4b, 0x03, 0x04, 0, 0]))).toBe('a ZIP archive');
  expect(describeBytes(pngLike())).toBe('a PNG image');
  expect(describeBytes(garbage(4096))).toBe('binary data');
  expect(describeBytes(Buffer.from('a,b\n1,2\n'))).toBe('plain text');
  expect(describeBytes(Buffer.alloc(0))).toBe('an empty file');
});

test('looksBinary: text with tabs and newlines is text, NUL bytes are not', () => {
  expect(looksBinary(Buffer.from('a\tb\r\nc\td\n'))).toBe(false);
  expect(looksBinary(Buffer.from('abc\0def'))).toBe(true);
});
