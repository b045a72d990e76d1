// The glossary page (glossary.html): docs/glossary.md's terms in English and Simplified Chinese
// (i18n/glossary.json, which scripts/glossary.mjs writes), filtered as the reader types. ?q= finds a term.
//
// host = { i18n, document, window, fetch } — the only place the environment comes from (main-glossary.js).

import { h, setChildren } from '../../views/dom.js';
import { initShell, statusLine } from '../shared/workbench.js';

/** The terms whose English, Chinese or remark holds `query` (any case). */
export function findTerms(terms, query) {
  const q = String(query || '').trim().toLowerCase();
  if (!q) return terms;
  return terms.filter((x) => [x.en, x.zh, x.remark].some((v) => String(v).toLowerCase().includes(q)));
}

export async function startGlossary(host) {
  const { i18n } = host;
  const doc = host.document;
  const status = statusLine(doc);
  initShell(host, () => {});
  const body = doc.getElementById('glossary-terms');
  const filter = doc.getElementById('glossary-filter');
  let terms = [];
  const render = () => setChildren(body, findTerms(terms, filter.value).map((x) =>
    h(doc, 'tr', {}, h(doc, 'td', { text: x.en }), h(doc, 'td', { attrs: { lang: 'zh-CN' }, text: x.zh }), h(doc, 'td', { class: 'muted', text: x.remark }))));
  filter.addEventListener('input', render);
  filter.value = new URLSearchParams(host.window.location.search).get('q') || '';
  try {
    const res = await host.fetch('i18n/glossary.json', { headers: { Accept: 'application/json' } });
    if (!res.ok) throw new Error(`HTTP ${res.status}`);
    terms = (await res.json()).terms || [];
  } catch (err) {
    status(i18n.t('ui.glossary.failed', { error: err.message }), 'error');
  }
  render();
}
