// Entry point of corpus.html: the one place that reads the browser's globals,
// handed to the app as its host (Netron-style injection).
import { startCorpus } from './app/corpus.js';

const g = globalThis;

startCorpus({
  document: g.document,
  window: g,
  fetch: g.fetch.bind(g),
  XMLHttpRequest: g.XMLHttpRequest,
  EventSource: g.EventSource,
  FormData: g.FormData,
});
