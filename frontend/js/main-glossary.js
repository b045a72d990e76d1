// Entry point of glossary.html: the one place that reads the browser's globals,
// handed to the app as its host (Netron-style injection).
import { startGlossary } from './app/glossary/glossary.js';
import { initLanguage } from './app/shared/language.js';
import { I18n } from './core/i18n.js';

const g = globalThis;

const host = {
  i18n: new I18n(), // the page's language: its words reach the API clients and views through the host
  document: g.document,
  window: g,
  fetch: g.fetch.bind(g),
  languages: g.navigator ? g.navigator.languages || [g.navigator.language] : [],
};

// The page's language first (its catalogs load before anything is drawn), then the page.
await initLanguage(host);
await startGlossary(host);
// (the page now answers its controls: a user's click or a test's, until here, fell on nothing)
g.document.documentElement.dataset.ready = '';
