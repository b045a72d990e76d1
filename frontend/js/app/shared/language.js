// The page's language (issue 21): chosen before the page's app starts (?lang=, the remembered
// choice, the browser's languages), and the header's switch, which changes the page in place:
// every remembered message is rewritten and the views that compose text redraw (they listen to
// the host's i18n.onChange), so a running session, a lesson or an open capture goes on as it was.
// host: { i18n, document, window, fetch, languages }

import { chooseLanguage, useLanguage, LANGUAGES, LANGUAGE_NAMES, STORAGE_KEY } from '../../core/i18n.js';
import { h, relabel } from '../../views/dom.js';
import { safeStorage } from './workbench.js';

/** The URL of the page with its ?lang= (if it has one) set to `lang`. */
function withLanguage(location, lang) {
  const search = String(location.search || '');
  if (!/[?&]lang=/.test(search)) return null;
  const next = search.replace(/([?&]lang=)[^&#]*/, `$1${encodeURIComponent(lang)}`);
  return `${location.pathname}${next}${location.hash || ''}`;
}

function show(doc, i18n) {
  const lang = i18n.lang;
  doc.documentElement.setAttribute('lang', lang);
  relabel(doc.documentElement, i18n);
  const select = doc.getElementById('lang-switch');
  if (select) select.value = lang;
}

/**
 * Loads the page's language and wires the switch; resolves the language in force. A catalog that
 * does not load leaves the page in English (the one the HTML is written in) and says so.
 */
export async function initLanguage(host) {
  const { i18n } = host;
  const doc = host.document;
  const win = host.window;
  const store = safeStorage(win);
  const fetch = host.fetch;
  const wanted = chooseLanguage({ search: win.location ? win.location.search : '', stored: store.get(STORAGE_KEY), languages: host.languages || [] });
  try {
    await useLanguage(i18n, fetch, wanted);
    if (/[?&]lang=/.test(win.location.search || '')) store.set(STORAGE_KEY, i18n.lang);
  } catch (err) {
    if (win.console) win.console.error(`ZMTP Lab: ${err.message}`);
  }
  show(doc, i18n);
  const select = doc.getElementById('lang-switch');
  if (select) {
    if (!select.options.length) for (const lang of LANGUAGES) select.appendChild(h(doc, 'option', { value: lang, text: LANGUAGE_NAMES[lang] }));
    select.value = i18n.lang;
    select.addEventListener('change', async () => {
      const lang = select.value;
      try {
        await useLanguage(i18n, fetch, lang);
      } catch (err) {
        select.value = i18n.lang;
        if (win.console) win.console.error(`ZMTP Lab: ${err.message}`);
        return;
      }
      store.set(STORAGE_KEY, i18n.lang);
      const url = withLanguage(win.location, i18n.lang);
      if (url && win.history && win.history.replaceState) win.history.replaceState(win.history.state, '', url);
      show(doc, i18n);
    });
  }
  return i18n.lang;
}
