// The corpus routes of the backend, over an injected environment. DOM-free:
// host = { fetch, EventSource, base } (base: URL prefix, '' by default).
//
// Routes used (all JSON unless stated):
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

import { ApiError, detailText, query } from './api.js';

export const FINAL_STATES = ['done', 'error', 'cancelled'];

const seg = (s) => encodeURIComponent(String(s));

export function createCorpusApi(host) {
  const base = host.base || '';

  async function request(method, path, body) {
    const init = { method, headers: { Accept: 'application/json' } };
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const res = await host.fetch(base + path, init);
    const text = await res.text();
    let data = null;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch {
        data = { detail: text.slice(0, 300) };
      }
    }
    if (!res.ok) throw new ApiError(res.status, detailText(data, res.status));
    return data;
  }

  return {
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
      return `${base}/api/corpus/runs/${seg(id)}/report`;
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
      const es = new host.EventSource(`${base}/api/corpus/runs/${seg(id)}/progress`);
      let closed = false;
      const close = () => {
        if (!closed) es.close();
        closed = true;
      };
      es.onmessage = (e) => {
        let msg;
        try {
          msg = JSON.parse(e.data);
        } catch {
          return;
        }
        onMessage(msg);
        if (FINAL_STATES.includes(msg.state)) close();
      };
      es.onerror = () => {
        if (closed) return;
        close();
        if (onFailure) onFailure();
      };
      return close;
    },
  };
}
