import { describe, expect, test } from 'vitest';
import { formatNumber, labelEnd, labelParagraphs, labelStart, readNumbering } from './docx-numbering';

describe('Word list numbers', () => {
  test('formats as Word writes them', () => {
    expect([1, 4, 9, 14, 1994].map((n) => formatNumber(n, 'upperRoman'))).toEqual(['I', 'IV', 'IX', 'XIV', 'MCMXCIV']);
    expect([1, 26, 27, 53].map((n) => formatNumber(n, 'lowerLetter'))).toEqual(['a', 'z', 'aa', 'aaa']);
    expect([1, 2, 3, 4, 11, 12, 13, 21, 102].map((n) => formatNumber(n, 'ordinal'))).toEqual(['1st', '2nd', '3rd', '4th', '11th', '12th', '13th', '21st', '102nd']);
    expect(formatNumber(7, 'decimalZero')).toBe('07');
    expect(formatNumber(3, 'decimalEnclosedCircle')).toBe('③');
    expect(formatNumber(5, 'someFormatNotWrittenHere')).toBe('5');
  });

  test('a deeper level restarts after a higher one unless lvlRestart says never; a legal level shows decimals', () => {
    const numbering = readNumbering(
      '<w:numbering><w:abstractNum w:abstractNumId="0"><w:lvl w:ilvl="0"><w:start w:val="1"/><w:numFmt w:val="upperRoman"/><w:lvlText w:val="%1."/></w:lvl>'
      + '<w:lvl w:ilvl="1"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:lvlRestart w:val="0"/><w:lvlText w:val="(%2)"/></w:lvl>'
      + '<w:lvl w:ilvl="2"><w:start w:val="1"/><w:numFmt w:val="decimal"/><w:isLgl/><w:lvlText w:val="%1.%2.%3"/></w:lvl></w:abstractNum>'
      + '<w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num></w:numbering>',
      undefined,
    );
    const p = (level: number) => `<w:p><w:pPr><w:numPr><w:ilvl w:val="${level}"/><w:numId w:val="1"/></w:numPr></w:pPr><w:r><w:t>x</w:t></w:r></w:p>`;
    const out = labelParagraphs([0, 1, 2, 1, 0, 1, 2].map(p).join(''), numbering);
    const shown = [...out.matchAll(new RegExp(`${labelStart}([^${labelEnd}]*)${labelEnd}`, 'g'))].map((m) => m[1]);
    expect(shown).toEqual(['I.', '(1)', '1.1.1', '(2)', 'II.', '(3)', '2.3.1']);
  });
});
