// The capture viewer's search and its list of captures, beyond core/api.js. DOM-free.
//
// Routes used:
//   GET    /api/captures/{id}/events?conn=&offset=&limit=&kind=&q=&more=1 -> {events, total, searched, elements, partial}
//   DELETE /api/captures/{id}                     -> 204
//   GET    /api/corpus/captures                   -> {captures: [{id, name, size, created, state}]} (this client's)

import { ApiError, detailText, jsonRequester, query } from './api.js';

const seg = (s) => encodeURIComponent(String(s));

export function createCaptureSearchApi(host) {
  const base = host.base || '';
  const request = jsonRequester(host);
  return {
    /** Resolves once none of its JSON requests is in flight, or after `limit` ms if given (a search given an
     * AbortSignal is ended by it). */
    idle(limit) {
      return request.idle(limit);
    },
    /**
     * A page of a filtered list: without `conn`, of every connection (each event keeps `conn` and `index`).
     * `signal` (an AbortSignal) ends the request: the server then stops the search (a client may run
     * only a few at once).
     */
    async events(id, { conn, offset = 0, limit = 200, kind, q, more } = {}, signal = undefined) {
      const path = `/api/captures/${seg(id)}/events${query({ conn, offset, limit, kind, q, more: more ? 1 : undefined, fields: 0 })}`;
      if (!signal) return request('GET', path);
      const res = await host.fetch(base + path, { method: 'GET', headers: { Accept: 'application/json', 'Accept-Language': host.i18n.lang }, signal });
      const text = await res.text();
      let data = null;
      try {
        data = text ? JSON.parse(text) : null;
      } catch {
        data = { detail: text.slice(0, 300) };
      }
      if (!res.ok) throw new ApiError(res.status, detailText(host.i18n, data, res.status));
      return data;
    },
    deleteCapture(id) {
      return request('DELETE', `/api/captures/${seg(id)}`);
    },
    /** The captures this client uploaded (the server counts them per address). */
    myCaptures() {
      return request('GET', '/api/corpus/captures');
    },
  };
}

/**
 * What the filter bar says about a filtered list: `total` matches, where, and how far a time-limited
 * search got. res: the first page's {total, searched, elements, partial}; scope: 'all' | 'conn'.
 */
export function matchText(i18n, res, { scope = 'all', conn = null, connections = 0 } = {}) {
  const n = Number(res && res.total) || 0;
  const { t } = i18n;
  const where = scope === 'conn' ? t('ui.search.inConn', { conn }) : connections === 1 ? t('ui.search.inTheConn') : t('ui.search.inAll', { n: connections });
  const fmt = (x) => Number(x).toLocaleString('en-US');
  if (res && res.partial && typeof res.searched === 'number' && typeof res.elements === 'number') {
    return t('ui.search.partial', { n: fmt(n), where, searched: fmt(res.searched), elements: fmt(res.elements) });
  }
  return t('ui.search.matching', { n: fmt(n), where });
}
