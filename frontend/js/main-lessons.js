// Entry point of lessons.html: the one place that reads the browser's globals,
// handed to the app as its host (Netron-style injection).
import { startLessons } from './app/lessons/lessons.js';
import { initLanguage } from './app/shared/language.js';
import { I18n } from './core/i18n.js';

const g = globalThis;

const host = {
  i18n: new I18n(), // the page's language: its words reach the API clients and views through the host
  document: g.document,
  window: g,
  fetch: g.fetch.bind(g),
  WebSocket: g.WebSocket,
  clipboard: g.navigator ? g.navigator.clipboard : null,
  languages: g.navigator ? g.navigator.languages || [g.navigator.language] : [],
};

// The page's language first (its catalogs load before anything is drawn), then the page.
await initLanguage(host);
await startLessons(host);
// (the page now answers its controls: a user's click or a test's, until here, fell on nothing)
g.document.documentElement.dataset.ready = '';
