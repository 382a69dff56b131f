import canonicalize from 'canonicalize';

/**
 * RFC 8785 (JSON Canonicalization Scheme) bytes of a JSON value: object keys sorted by UTF-16 code
 * units, no whitespace, ECMAScript number serialisation, minimal string escaping, UTF-8.
 * The `canonicalize` package (by an author of RFC 8785) does the work; this only fixes the output to
 * bytes and turns "nothing to serialise" (undefined, a function) into an error rather than "undefined".
 * Throws on NaN/Infinity, lone surrogates, BigInt and cycles: none of them has a canonical form.
 */
export function canonicalJson(value: unknown): Buffer {
  const text = canonicalize(value);
  if (typeof text !== 'string') throw new TypeError('value has no JSON representation');
  return Buffer.from(text, 'utf8');
}
