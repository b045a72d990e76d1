// Entry point of index.html: the one place that reads the browser's globals,
// handed to the app as its host (Netron-style injection).
import { startPlayground } from './app/playground/playground.js';
import { initLanguage } from './app/shared/language.js';
import { I18n } from './core/i18n.js';

const host = {
  i18n: new I18n(), // the page's language: its words reach the API clients and views through the host
  document,
  window,
  fetch: window.fetch.bind(window),
  WebSocket: window.WebSocket,
  XMLHttpRequest: window.XMLHttpRequest,
  EventSource: window.EventSource,
  FormData: window.FormData,
  clipboard: navigator.clipboard,
  languages: navigator.languages || [navigator.language],
};

// The page's language first (its catalogs load before anything is drawn), then the page.
await initLanguage(host);
await startPlayground(host);
// (the page now answers its controls: a user's click or a test's, until here, fell on nothing)
document.documentElement.dataset.ready = '';
