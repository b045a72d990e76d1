// Entry point of lessons.html: the one place that reads the browser's globals,
// handed to the app as its host (Netron-style injection).
import { startLessons } from './app/lessons/lessons.js';
import { initLanguage } from './app/shared/language.js';

const g = globalThis;

const host = {
  document: g.document,
  window: g,
  fetch: g.fetch.bind(g),
  WebSocket: g.WebSocket,
  clipboard: g.navigator ? g.navigator.clipboard : null,
  languages: g.navigator ? g.navigator.languages || [g.navigator.language] : [],
};

// The page's language first (its catalogs load before anything is drawn), then the page.
await initLanguage(host);
startLessons(host);
