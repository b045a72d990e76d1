// Narration trees (parsed by the server from a small, safe Markdown subset:
// see backend/zmtplab/lessons/markdown.py) turned into DOM nodes. Text is only
// ever text nodes; a link survives only when it points at rfc.zeromq.org.
//
// renderNarration(doc, tree) -> DocumentFragment-like array of nodes

import { h } from '../views/dom.js';

const LINK = /^https?:\/\/rfc\.zeromq\.org(\/|$)/;

/** Whether a narration link may become an <a> (the server allows the same hosts). */
export function allowedLink(href) {
  return typeof href === 'string' && LINK.test(href);
}

function inline(doc, nodes, depth = 0) {
  const out = [];
  if (!Array.isArray(nodes) || depth > 6) return out;
  for (const n of nodes) {
    if (!n || typeof n !== 'object') continue;
    switch (n.t) {
      case 'text':
        out.push(doc.createTextNode(String(n.v ?? '')));
        break;
      case 'code':
        out.push(h(doc, 'code', { text: String(n.v ?? '') }));
        break;
      case 'strong':
        out.push(h(doc, 'strong', {}, inline(doc, n.children, depth + 1)));
        break;
      case 'em':
        out.push(h(doc, 'em', {}, inline(doc, n.children, depth + 1)));
        break;
      case 'link':
        if (allowedLink(n.href)) out.push(h(doc, 'a', { href: n.href, target: '_blank', rel: 'noopener noreferrer' }, inline(doc, n.children, depth + 1)));
        else out.push(...inline(doc, n.children, depth + 1));
        break;
      default:
        break;
    }
  }
  return out;
}

/** DOM nodes for a narration tree: p, ul, ol, pre blocks. */
export function renderNarration(doc, tree) {
  const out = [];
  if (!Array.isArray(tree)) return out;
  for (const b of tree) {
    if (!b || typeof b !== 'object') continue;
    if (b.type === 'p') out.push(h(doc, 'p', {}, inline(doc, b.children)));
    else if (b.type === 'ul' || b.type === 'ol') out.push(h(doc, b.type, {}, (b.items || []).map((item) => h(doc, 'li', {}, inline(doc, item)))));
    else if (b.type === 'pre') out.push(h(doc, 'pre', { class: 'abnf', text: String(b.text ?? '') }));
  }
  return out;
}
