// The DOM builder every view and panel uses: elements from tags, attributes and children, with
// text always set as text (never parsed as HTML, so the page's content security policy holds).

/**
 * el('button', {class: 'x', onclick: fn, dataset: {a: 1}, 'aria-label': 'y'}, 'text', child...)
 * Strings become text nodes (never HTML). attrs: `class`, `style` (object only), `dataset`,
 * `on<event>` functions, boolean true/false attributes, `value`/`checked`/`disabled`/`hidden`
 * as properties, others as attributes (null/undefined skipped). Children may be nested arrays.
 * Typed `any` for the type check (tests/types/tsconfig.web.json): the element's type follows the tag.
 * @param {string} tag @param {any} [attrs] @param {...any} children @returns {any}
 */
export function el(tag, attrs, ...children) {
  const node = tag.includes(':') || tag === 'svg'
    ? document.createElementNS('http://www.w3.org/2000/svg', tag.replace(/^svg:/, ''))
    : document.createElement(tag);
  if (attrs && (typeof attrs !== 'object' || attrs instanceof Node || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = null;
  }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class' || k === 'className') node.setAttribute('class', Array.isArray(v) ? v.filter(Boolean).join(' ') : v);
    else if (k === 'dataset') for (const [dk, dv] of Object.entries(v)) node.dataset[dk] = String(dv);
    else if (k === 'style' && typeof v === 'object') {
      for (const [sk, sv] of Object.entries(v)) {
        if (sk.startsWith('--')) node.style.setProperty(sk, sv); else node.style[sk] = sv;
      }
    } else if (k.startsWith('on') && typeof v === 'function') node.addEventListener(k.slice(2).toLowerCase(), v);
    else if (k === 'value' || k === 'checked' || k === 'disabled' || k === 'hidden' || k === 'selected' || k === 'indeterminate') node[k] = v;
    else if (v === true) node.setAttribute(k, '');
    else node.setAttribute(k, String(v));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(node, c);
    else if (c instanceof Node) node.append(c);
    else node.append(document.createTextNode(String(c)));
  }
}

/** Escapes nothing and needs nothing: text always goes through textContent. */
export function setText(node, text) {
  node.textContent = text == null ? '' : String(text);
  return node;
}

