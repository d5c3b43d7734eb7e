// Block sizes for tests/js/sizes.test.mjs: blank() hides strings and comments, blocks() measures
// the brace-delimited blocks that open on lines matching a pattern.
/** The source with strings, characters, template literals and comments blanked (newlines kept). */
export function blank(src) {
  let out = '';
  for (let i = 0; i < src.length;) {
    const c = src[i], d = src[i + 1];
    if (c === '/' && d === '/') { while (i < src.length && src[i] !== '\n') { out += ' '; i++; } continue; }
    if (c === '/' && d === '*') {
      out += '  '; i += 2;
      while (i < src.length && !(src[i] === '*' && src[i + 1] === '/')) { out += src[i] === '\n' ? '\n' : ' '; i++; }
      out += '  '; i += 2; continue;
    }
    if (c === '"' || c === "'" || c === '`') {
      out += ' '; i++;
      while (i < src.length && src[i] !== c) {
        if (src[i] === '\\') { out += ' '; i++; }
        out += src[i] === '\n' ? '\n' : ' '; i++;
      }
      out += ' '; i++; continue;
    }
    out += c; i++;
  }
  return out;
}

/** [{name, lines}] for each block that opens on a line matching `head` (the opening brace on that line or the next ones). */
export function blocks(src, head) {
  const text = blank(src);
  const lines = text.split('\n');
  const starts = [];
  let offset = 0;
  const lineOf = [];
  for (let i = 0; i < lines.length; i++) { lineOf.push(offset); offset += lines[i].length + 1; }
  for (let i = 0; i < lines.length; i++) {
    const m = head.exec(lines[i]);
    if (m) starts.push({ line: i, name: m[1] ?? m[0].trim() });
  }
  const out = [];
  for (const s of starts) {
    let pos = text.indexOf('{', lineOf[s.line]);
    if (pos < 0) continue;
    // a head without a body (a declaration: ';' before '{')
    const semi = text.indexOf(';', lineOf[s.line]);
    if (semi >= 0 && semi < pos) continue;
    let depth = 0, end = pos;
    for (; end < text.length; end++) {
      if (text[end] === '{') depth++;
      else if (text[end] === '}' && --depth === 0) break;
    }
    const endLine = text.slice(0, end).split('\n').length - 1;
    out.push({ name: s.name, start: s.line + 1, lines: endLine - s.line + 1 });
  }
  return out;
}
