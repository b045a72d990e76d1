// Entry point of lessons.html: the one place that reads the browser's globals,
// handed to the app as its host (Netron-style injection).
import { startLessons } from './app/lessons.js';

const g = globalThis;

startLessons({
  document: g.document,
  window: g,
  fetch: g.fetch.bind(g),
  WebSocket: g.WebSocket,
  clipboard: g.navigator ? g.navigator.clipboard : null,
});
