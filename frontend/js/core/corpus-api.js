// The corpus routes of the backend, over an injected environment. DOM-free:
// host = { i18n, fetch, EventSource, base } (i18n: the page's language, the report's; base: URL prefix, '' by default).
//
// Routes used (all JSON unless stated):
//   GET    /api/corpus/status                        -> {available, problem} (problem: what to install)
//   GET    /api/corpus/captures                      -> {captures: [{id, name, size, created, state}]}
//   POST   /api/corpus/runs {captures: [ids]}        -> 202 {id}; 404/409/422/503 {detail}
//   GET    /api/corpus/runs                          -> {runs: [run]}
//   GET    /api/corpus/runs/{id}                     -> run {id, state, phase, fraction, ..., captures, summary}
//   GET    /api/corpus/runs/{id}/progress            text/event-stream: data: {state, phase, fraction,
//                                                    tasks_done, tasks_total, elapsed, detail}
//   POST   /api/corpus/runs/{id}/cancel              -> 202 run
//   DELETE /api/corpus/runs/{id}                     -> 204
//   GET    /api/corpus/runs/{id}/report              text/html (its own CSP: shown in a sandboxed iframe)
//   GET    /api/corpus/runs/{id}/tables/{table}?offset=&limit=&capture=&kind=&conn=&dir= -> {rows, total, offset, limit}

import { followEvents, jsonRequester, query } from './api.js';

export const FINAL_STATES = ['done', 'error', 'cancelled'];

const seg = (s) => encodeURIComponent(String(s));

export function createCorpusApi(host) {
  const base = host.base || '';

  const request = jsonRequester(host);

  return {
    status() {
      return request('GET', '/api/corpus/status');
    },
    captures() {
      return request('GET', '/api/corpus/captures');
    },
    startRun(captureIds) {
      return request('POST', '/api/corpus/runs', { captures: captureIds });
    },
    runs() {
      return request('GET', '/api/corpus/runs');
    },
    run(id) {
      return request('GET', `/api/corpus/runs/${seg(id)}`);
    },
    cancelRun(id) {
      return request('POST', `/api/corpus/runs/${seg(id)}/cancel`);
    },
    deleteRun(id) {
      return request('DELETE', `/api/corpus/runs/${seg(id)}`);
    },
    reportUrl(id) {
      // (a frame sends the browser's own Accept-Language: the page's language goes in the URL)
      return `${base}/api/corpus/runs/${seg(id)}/report?lang=${encodeURIComponent(host.i18n.lang)}`;
    },
    /** One page of a table: params = { offset, limit, capture, kind, conn, dir } (empty ones left out). */
    table(id, table, params = {}) {
      return request('GET', `/api/corpus/runs/${seg(id)}/tables/${seg(table)}${query(params)}`);
    },
    /**
     * Follow a run's progress (server-sent events). onMessage gets each message; the
     * stream is closed when the run ends or by the returned function; onFailure when
     * the stream breaks before that.
     */
    followProgress(id, onMessage, onFailure) {
      return followEvents(host, `${base}/api/corpus/runs/${seg(id)}/progress`,
        (msg) => FINAL_STATES.includes(msg.state), onMessage, onFailure);
    },
  };
}
