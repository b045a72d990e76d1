// The capture viewer's search and its list of captures, beyond core/api.js. DOM-free.
//
// Routes used:
//   GET    /api/captures/{id}/events?conn=&offset=&limit=&kind=&q=&more=1 -> {events, total, searched, elements, partial}
//   DELETE /api/captures/{id}                     -> 204
//   GET    /api/corpus/captures                   -> {captures: [{id, name, size, created, state}]} (this client's)

import { jsonRequester, query } from './api.js';

const seg = (s) => encodeURIComponent(String(s));

export function createCaptureSearchApi(host) {
  const request = jsonRequester(host);
  return {
    /** A page of a filtered list: without `conn`, of every connection (each event keeps `conn` and `index`). */
    events(id, { conn, offset = 0, limit = 200, kind, q, more } = {}) {
      return request('GET', `/api/captures/${seg(id)}/events${query({ conn, offset, limit, kind, q, more: more ? 1 : undefined, fields: 0 })}`);
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
export function matchText(res, { scope = 'all', conn = null, connections = 0 } = {}) {
  const n = Number(res && res.total) || 0;
  const where = scope === 'conn' ? `in connection ${conn}` : connections === 1 ? 'in the connection' : `in all ${connections} connections`;
  const fmt = (x) => Number(x).toLocaleString('en-US');
  if (res && res.partial && typeof res.searched === 'number' && typeof res.elements === 'number') {
    return `${fmt(n)} matching so far ${where}: searched ${fmt(res.searched)} of ${fmt(res.elements)} elements (the server's time limit stopped the search)`;
  }
  return `${fmt(n)} matching ${where}`;
}
