// The only way views build DOM: createElement + textContent. Payload bytes are
// data, so nothing here (or in any view) ever parses a string as HTML.
//
// h(doc, 'div', { class: 'x', text: 'hello', title: '...', attrs: {...}, on: {click}, style: {...} }, ...children)
// Children may be nodes, strings (become text nodes), arrays, or null/false (skipped).
// Words from the catalogs (core/i18n.js): { t: message } for the text, and tTitle, tPlaceholder,
// tLabel (aria-label) for attributes, each a Message of the page's i18n (`i18n.message(id, params)`,
// or a `messages()` table's entry); a Message given as text, title or placeholder is the same. The
// element remembers the id, so relabel(root, i18n) rewrites it in place when the language changes.

import { Message } from '../core/i18n.js';
import { frameQueue } from '../core/frames.js';

export function h(doc, tag, props = {}, ...children) {
  const el = doc.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === undefined || value === null) continue;
    switch (key) {
      case 'class':
        el.className = value;
        break;
      case 'text':
        if (value instanceof Message) tr(el, value);
        else el.textContent = String(value);
        break;
      case 'title':
        if (value instanceof Message) tr(el, value, 'title');
        else el.setAttribute('title', String(value));
        break;
      case 'placeholder':
        if (value instanceof Message) tr(el, value, 'placeholder');
        else el.placeholder = value;
        break;
      case 't':
      case 'tTitle':
      case 'tPlaceholder':
      case 'tLabel':
        tr(el, value, I18N_TARGETS[key]);
        break;
      case 'attrs':
        for (const [a, v] of Object.entries(value)) {
          if (v instanceof Message && I18N_ATTR[a]) tr(el, v, a);
          else if (v !== undefined && v !== null && v !== false) el.setAttribute(a, v === true ? '' : String(v));
        }
        break;
      case 'on':
        for (const [type, fn] of Object.entries(value)) el.addEventListener(type, fn);
        break;
      case 'style':
        for (const [p, v] of Object.entries(value)) el.style[p] = v;
        break;
      default:
        el[key] = value; // plain properties: type, value, checked, disabled, href, tabIndex, ...
    }
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (typeof c === 'string' || typeof c === 'number' || c instanceof String) el.appendChild(el.ownerDocument.createTextNode(String(c)));
    else el.appendChild(c);
  }
  return el;
}

// The prop of h(), the attribute that remembers the id, and what the message is written into.
const I18N_TARGETS = { t: 'text', tTitle: 'title', tPlaceholder: 'placeholder', tLabel: 'aria-label' };
const I18N_ATTR = { text: 'data-i18n', title: 'data-i18n-title', placeholder: 'data-i18n-placeholder', 'aria-label': 'data-i18n-label' };

function write(el, target, text) {
  if (target === 'text') el.textContent = text;
  else el.setAttribute(target, text);
}

/**
 * Writes `message` (a Message: `i18n.message(id, params)`) into el's text or attribute `target`
 * ('text', 'title', 'placeholder', 'aria-label') and remembers its id and params for relabel().
 */
export function tr(el, message, target = 'text') {
  if (!(message instanceof Message)) throw new TypeError(`tr() takes a Message (i18n.message(id)), not ${JSON.stringify(message)}`);
  const { id, params } = message;
  el.setAttribute(I18N_ATTR[target], id);
  if (params && Object.keys(params).length) el.setAttribute(`${I18N_ATTR[target]}-args`, JSON.stringify(params));
  else el.removeAttribute(`${I18N_ATTR[target]}-args`);
  write(el, target, String(message));
  return el;
}

/** Rewrites every remembered message under `root` (root included) in the language now in force in `i18n`. */
export function relabel(root, i18n) {
  const all = root.querySelectorAll ? [root, ...root.querySelectorAll('[data-i18n],[data-i18n-title],[data-i18n-placeholder],[data-i18n-label]')] : elements(root);
  for (const el of all) {
    if (!el.getAttribute) continue;
    for (const [target, attr] of Object.entries(I18N_ATTR)) {
      const id = el.getAttribute(attr);
      if (!id) continue;
      const args = el.getAttribute(`${attr}-args`);
      write(el, target, i18n.t(id, args ? JSON.parse(args) : undefined));
    }
  }
}

/** root and every element under it (where there is no querySelectorAll). */
function elements(root) {
  const out = [];
  const walk = (n) => {
    if (n.getAttribute) out.push(n);
    for (const c of n.childNodes || []) walk(c);
  };
  walk(root);
  return out;
}

/** Remove all children. */
export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

/** Replace an element's children. */
export function setChildren(el, ...children) {
  clear(el);
  return append(el, children);
}

/** Is this keyboard event typed into a form control (so page shortcuts should not fire)? */
export function isTyping(event) {
  const t = event.target;
  if (!t || !t.tagName) return false;
  const tag = String(t.tagName).toUpperCase();
  return tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT' || !!t.isContentEditable;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

/** An SVG element: attributes set as given, children as in h() (strings become text nodes). */
export function s(doc, tag, attrs = {}, ...children) {
  const el = doc.createElementNS(SVG_NS, tag);
  for (const [a, v] of Object.entries(attrs)) if (v !== undefined && v !== null && v !== false) el.setAttribute(a, String(v));
  return append(el, children);
}

let panels = 0;

/** A titled panel (title: a Message): returns { root, body, tools }.
 * The body scrolls, so it takes the keyboard focus (arrows and page keys scroll it) and is named by its title. */
export function panel(doc, title, className = '') {
  const titleId = `panel-title-${++panels}`;
  const tools = h(doc, 'div', { class: 'panel-tools' });
  const body = h(doc, 'div', { class: 'panel-body', tabIndex: 0, attrs: { role: 'region', 'aria-labelledby': titleId } });
  const heading = h(doc, 'h2', { t: title, attrs: { id: titleId } });
  const root = h(doc, 'section', { class: `panel ${className}`.trim() }, h(doc, 'header', { class: 'panel-head' }, heading, tools), body);
  return { root, body, tools };
}

/** Run fn at most once per animation frame: in the page's one frame callback (core/frames.js), with every other view's. */
export function frameThrottle(win, fn) {
  return frameQueue(win).throttle(fn);
}

/** Observe an element's size (ResizeObserver where available, else window resize). Returns a stop function. */
export function onResize(win, el, fn) {
  if (win && win.ResizeObserver) {
    const ro = new win.ResizeObserver(() => fn());
    ro.observe(el);
    return () => ro.disconnect();
  }
  if (win && win.addEventListener) {
    win.addEventListener('resize', fn);
    return () => win.removeEventListener('resize', fn);
  }
  return () => {};
}

/**
 * Brings `el` into view within its own scrolling pane only (the nearest ancestor that scrolls), never by scrolling
 * a pane's ancestors: `scrollIntoView` also scrolls boxes whose overflow is hidden, which leaves a pane's heading
 * cut off at the top of its column.
 */
export function revealInPane(el) {
  const win = el && el.ownerDocument && el.ownerDocument.defaultView;
  if (!win || !el.getBoundingClientRect) return;
  let pane = el.parentElement;
  while (pane && !/(auto|scroll)/.test(win.getComputedStyle(pane).overflowY + win.getComputedStyle(pane).overflowX)) pane = pane.parentElement;
  if (!pane) return;
  const box = el.getBoundingClientRect();
  const view = pane.getBoundingClientRect();
  if (box.top < view.top) pane.scrollTop -= view.top - box.top;
  else if (box.bottom > view.bottom) pane.scrollTop += Math.min(box.bottom - view.bottom, box.top - view.top);
  if (box.left < view.left) pane.scrollLeft -= view.left - box.left;
  else if (box.right > view.right) pane.scrollLeft += Math.min(box.right - view.right, box.left - view.left);
}
