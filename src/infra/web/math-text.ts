/**
 * MathML as linear text, the way a formula is typed in plain text: `x = (−b ± √(b^2 − 4ac))/(2a)`.
 * Presentation markup is written out (fractions with `/`, scripts with `^` and `_`, roots with
 * `√`, tables row by row); a `<semantics>` element gives its first child, and annotations (TeX,
 * content MathML) are read only when there is no presentation markup. `alttext` is the last resort.
 */
import type { DomNode } from './dom-node';

const tag = (n: DomNode) => n.nodeName.toLowerCase().replace(/^m:/, '');
const elements = (n: DomNode): DomNode[] => Array.from(n.childNodes).filter((c) => c.nodeType === 1);
const squash = (s: string) => s.replace(/\s+/g, ' ').trim();

/** Operators written with a space on each side (relations and binary operators). */
const SPACED = /^(?:[=<>≤≥≠≈≡∼≃≅∝→←↔⇒⇐⇔↦+±∓−\-×÷·∗∘∪∩∈∉⊂⊃⊆⊇∧∨]|:=|==|!=|<=|>=|and|or|mod)$/;
/** Invisible operators (function application, invisible times, separator, plus). */
const INVISIBLE = /^[\u2061-\u2064]*$/;

/** Whether a part needs parentheses to stay one operand (`(a + b)/2`, `x^(n+1)`). */
function group(s: string): string {
  if (s.length <= 1 || /^[\p{L}\p{N}.]+$/u.test(s) || /^\(.*\)$/.test(s) || /^[√∑∏∫]/.test(s)) return s;
  return `(${s})`;
}

/** A fraction's part: a lone number or identifier as it is, anything else in parentheses (`(2a)`). */
function operand(k: DomNode | undefined): string {
  if (!k) return '';
  const s = squash(node(k));
  return ['mi', 'mn'].includes(tag(k)) || (s.length <= 1) || /^\(.*\)$/.test(s) ? s : `(${s})`;
}

function node(n: DomNode): string {
  if (n.nodeType === 3) return squash(n.textContent ?? '');
  if (n.nodeType !== 1) return '';
  const kids = elements(n);
  const at = (i: number) => (kids[i] ? node(kids[i]) : '');
  switch (tag(n)) {
    case 'mi': case 'mn': case 'mtext': case 'ms':
      return squash(n.textContent ?? '');
    case 'mo': {
      const op = squash(n.textContent ?? '');
      if (INVISIBLE.test(op)) return '';
      return SPACED.test(op) ? ` ${op} ` : op;
    }
    case 'mspace': return ' ';
    case 'mphantom': case 'annotation': case 'annotation-xml': case 'none': case 'mprescripts': return '';
    case 'semantics': {
      const shown = kids.find((k) => !/^annotation/.test(tag(k)));
      if (shown) return node(shown);
      const tex = kids.find((k) => tag(k) === 'annotation');
      return squash(tex?.textContent ?? '');
    }
    case 'mfrac': return `${operand(kids[0])}/${operand(kids[1])}`;
    case 'msup': return `${at(0)}^${group(squash(at(1)))}`;
    case 'msub': return `${at(0)}_${group(squash(at(1)))}`;
    case 'msubsup': return `${at(0)}_${group(squash(at(1)))}^${group(squash(at(2)))}`;
    case 'munder': return `${at(0)}_${group(squash(at(1)))}`;
    case 'mover': {
      const over = squash(at(1));
      // An accent (x̄, x⃗, x̂) stays on its letter.
      return /^[¯‾^~ˆ˜→⃗˙¨]$/.test(over) ? `${at(0)}${over}` : `${at(0)}^${group(over)}`;
    }
    case 'munderover': return `${at(0)}_${group(squash(at(1)))}^${group(squash(at(2)))}`;
    case 'msqrt': return `√${group(squash(kids.map(node).join('')))}`;
    case 'mroot': return `${group(squash(at(1)))}√${group(squash(at(0)))}`;
    case 'mfenced': {
      const open = n.getAttribute?.('open') ?? '(';
      const close = n.getAttribute?.('close') ?? ')';
      const sep = (n.getAttribute?.('separators') ?? ',').trim().charAt(0) || ',';
      return `${open}${kids.map((k) => squash(node(k))).join(`${sep} `)}${close}`;
    }
    case 'mtable':
      return kids.map((row) => elements(row).map((cell) => squash(node(cell))).filter(Boolean).join(', ')).filter(Boolean).join('; ');
    default: {
      // A leading operator is a sign (`−b`), not a binary one.
      const parts = Array.from(n.childNodes).map(node);
      const first = Array.from(n.childNodes).findIndex((c) => c.nodeType === 1);
      if (first >= 0 && tag(n.childNodes[first]) === 'mo') parts[first] = parts[first].trim();
      return parts.join('');
    }
  }
}

/** The formula of a `<math>` element as one line of text ('' when it has none). */
export function mathText(math: DomNode): string {
  const text = squash(node(math)).replace(/\( /g, '(').replace(/ \)/g, ')');
  if (text) return text;
  return squash(math.getAttribute?.('alttext') ?? '');
}
