// Entry point of index.html: the one place that reads the browser's globals,
// handed to the app as its host (Netron-style injection).
import { startPlayground } from './app/playground.js';

startPlayground({
  document,
  window,
  fetch: window.fetch.bind(window),
  WebSocket: window.WebSocket,
  XMLHttpRequest: window.XMLHttpRequest,
  EventSource: window.EventSource,
  FormData: window.FormData,
  clipboard: navigator.clipboard,
});
