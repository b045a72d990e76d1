// The backend's HTTP routes, over an injected environment. DOM-free:
// host = { i18n, fetch, XMLHttpRequest, EventSource, base } (i18n: the page's language, which the server's
// answers come in; base: URL prefix, '' by default).
//
// Routes used (all JSON unless stated):
//   POST /api/sessions                       {mode, server, client} -> 201 {id}
//   POST /api/sessions                       {mode, nodes, links, proxies} | {preset, mode} -> 201 {id}
//   GET  /api/sessions/presets               -> {presets: [{id, title, description, topology, script}]}
//   GET  /api/sessions/faults                -> {faults: [{fault, modes}]} (what the fault menu offers)
//   GET  /api/sessions/{id}/export.pcapng    (link)
//   GET  /api/sessions/{id}/export.json      (link)
//   GET  /api/sessions/{id}/export.html      (link: the illustrated page)
//   GET  /api/captures/{id}/illustrated?conn=&from=&to=   (link: the illustrated page)
//   WS   /ws/sessions/{id}?batch=1&log=0&marks=1   (see session.js)
//   POST /api/decode                         {hex} -> {events}
//   POST /api/captures                       multipart `file` -> 201 {id}; 413/415 {detail}
//   GET  /api/captures/{id}/progress         text/event-stream: data: {state, percent, detail}
//   GET  /api/captures/{id}                  summary
//   GET  /api/captures/{id}/events?conn=&offset=&limit=&kind=&q=&fields=0|1 -> {events, total}
//   GET  /api/captures/{id}/events/{index}?conn=   one event with fields
//   GET  /api/captures/{id}/packets/{number} -> {layers: [{name, fields: [{name, value}]}]}
//   GET  /api/live/interfaces                -> {interfaces}
//   POST /api/live                           {source: "capture", interface, port} | {source: "tap", target,
//                                            listen_port} -> 201 {id, state, listen}
//   DELETE /api/live/{id}                    -> 204
//   WS   /ws/live/{id}?batch=1               (see live.js)


export class ApiError extends Error {
  constructor(status, detail) {
    super(detail || `HTTP ${status}`);
    this.status = status;
    this.detail = detail;
  }
}

/** FastAPI's `detail` may be a string or a list of validation errors. */
export function detailText(i18n, body, status) {
  const d = body && typeof body === 'object' ? body.detail : null;
  if (typeof d === 'string') return d;
  if (Array.isArray(d)) return d.map((e) => (e && e.msg ? `${(e.loc || []).join('.')}: ${e.msg}` : JSON.stringify(e))).join('; ');
  if (status === 413) return i18n.t('ui.http.413');
  if (status === 415) return i18n.t('ui.http.415');
  if (status === 429) return i18n.t('ui.http.429');
  if (status === 507) return i18n.t('ui.http.507');
  return `HTTP ${status}`;
}

export function query(params) {
  const parts = [];
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === null || v === '') continue;
    parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
  }
  return parts.length ? '?' + parts.join('&') : '';
}

const seg = (s) => encodeURIComponent(String(s));

/**
 * A JSON request function over `host.fetch`: request(method, path, body?) resolves the parsed
 * body (null when empty) or throws an ApiError with the server's `detail`. request.idle() waits for the
 * requests in flight.
 */
export function jsonRequester(host) {
  const base = host.base || '';
  const pending = new Set();
  async function send(method, path, body) {
    // The page's language: the server's `detail` messages, notes and findings come in it.
    const init = { method, headers: { Accept: 'application/json', 'Accept-Language': host.i18n.lang } };
    if (body !== undefined) {
      init.headers['Content-Type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const res = await host.fetch(base + path, init);
    let data = null;
    const text = await res.text();
    if (text) {
      try {
        data = JSON.parse(text);
      } catch {
        data = { detail: text.slice(0, 300) };
      }
    }
    if (!res.ok) throw new ApiError(res.status, detailText(host.i18n, data, res.status));
    return data;
  }
  function request(method, path, body) {
    const sent = send(method, path, body);
    pending.add(sent);
    const settled = () => pending.delete(sent);
    sent.then(settled, settled);
    return sent;
  }
  /** Resolves once none of this function's requests is in flight (those started meanwhile too), or after `limit`
   * ms when one is given (a request that never ends must not hold its caller forever). */
  request.idle = (limit) => {
    const settled = (async () => {
      while (pending.size) await Promise.allSettled([...pending]);
    })();
    if (limit === undefined) return settled;
    let timer;
    const late = new Promise((resolve) => {
      timer = setTimeout(resolve, limit);
    });
    return Promise.race([settled, late]).finally(() => clearTimeout(timer));
  };
  return request;
}

/**
 * Follow a server-sent event stream of JSON messages until `isFinal(message)`: onMessage gets
 * each message, onFailure a broken stream. Returns the function that closes it.
 */
export function followEvents(host, url, isFinal, onMessage, onFailure) {
  const es = new host.EventSource(url);
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
    if (isFinal(msg)) close();
  };
  es.onerror = () => {
    if (closed) return;
    close();
    if (onFailure) onFailure();
  };
  return close;
}

export function createApi(host) {
  const base = host.base || '';
  const request = jsonRequester(host);

  return {
    /** Resolves once none of this client's JSON requests is in flight, or after `limit` ms if given. */
    idle(limit) {
      return request.idle(limit);
    },
    createSession(config) {
      return request('POST', '/api/sessions', config);
    },
    sessionFaults() {
      return request('GET', '/api/sessions/faults');
    },
    /** The topologies a teacher picks from (issue 19): {presets: [{id, title, description, topology, script}]}. */
    sessionPresets() {
      return request('GET', '/api/sessions/presets');
    },
    sessionExportUrl(id, format) {
      // The illustrated page is written in the page's language (a download sends no Accept-Language of ours).
      if (format === 'html') return `${base}/api/sessions/${seg(id)}/export.html${query({ lang: host.i18n.lang })}`;
      if (format === 'lesson') return `${base}/api/sessions/${seg(id)}/lesson.yaml`;
      return `${base}/api/sessions/${seg(id)}/export.${format === 'json' || format === 'py' ? format : 'pcapng'}`;
    },
    /** The illustrated page of a capture's connection, elements `from` to `to` (indexes, inclusive). */
    captureIllustratedUrl(id, conn, from, to) {
      return `${base}/api/captures/${seg(id)}/illustrated${query({ conn, from, to, lang: host.i18n.lang })}`;
    },
    /**
     * ws:// or wss:// URL for a session, from the page's location {protocol, host}.
     * batch=1: a busy session sends several messages per websocket message (a JSON
     * array); log=0: no simulation `log` messages (the page does not show them); fields=0: events
     * without their fields (an element's come with sessionEvent when it is opened).
     */
    sessionSocketUrl(location, id, { watch = false } = {}) {
      const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
      // (`watch`: a student following a presented session: the socket takes no command, and a class's connections,
      // every student's page among them, come only counted: each of 200 pages getting all 200 is the class squared)
      return `${scheme}//${location.host}${base}/ws/sessions/${seg(id)}?batch=1&log=0&marks=1&fields=0${watch ? '&watch=1&external=summary' : ''}&lang=${encodeURIComponent(host.i18n.lang)}`;
    },
    /** One event of a session with its fields, by its `seq`. */
    sessionEvent(id, seq) {
      return request('GET', `/api/sessions/${seg(id)}/events/${seg(seq)}`);
    },
    decode(hex) {
      return request('POST', '/api/decode', { hex });
    },
    liveInterfaces() {
      return request('GET', '/api/live/interfaces');
    },
    createLive(body) {
      return request('POST', '/api/live', body);
    },
    stopLive(id) {
      return request('DELETE', `/api/live/${seg(id)}`);
    },
    liveSocketUrl(location, id) {
      const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
      return `${scheme}//${location.host}${base}/ws/live/${seg(id)}?batch=1&lang=${encodeURIComponent(host.i18n.lang)}`;
    },
    capture(id) {
      return request('GET', `/api/captures/${seg(id)}`);
    },
    captureEvents(id, { conn, offset = 0, limit = 200, kind, q, fields = 0 } = {}) {
      return request('GET', `/api/captures/${seg(id)}/events${query({ conn, offset, limit, kind, q, fields })}`);
    },
    captureEvent(id, index, conn) {
      return request('GET', `/api/captures/${seg(id)}/events/${seg(index)}${query({ conn })}`);
    },
    /** The capture as a whole (zmtplab analyze): nodes, connections, flows, findings. 409 until dissected. */
    captureAnalysis(id) {
      return request('GET', `/api/captures/${seg(id)}/analysis`);
    },
    /** The CURVE doctor with the server's secret key(s) (sent once, kept nowhere): { curve, findings }. */
    captureCurveCheck(id, secrets) {
      return request('POST', `/api/captures/${seg(id)}/curve-check`, { secrets });
    },
    /** The capture replayed as a topology with `changes` (NODE.OPTION=VALUE): fidelity, diff, and its `topology`. */
    captureReplay(id, changes = []) {
      return request('POST', `/api/captures/${seg(id)}/replay`, { set: changes });
    },
    capturePacket(id, number) {
      return request('GET', `/api/captures/${seg(id)}/packets/${seg(number)}`);
    },
    /**
     * Follow dissection progress (server-sent events). onMessage gets
     * {state, percent, detail}; the stream is closed on done/error or by the
     * returned function.
     */
    captureProgress(id, onMessage, onFailure) {
      return followEvents(host, `${base}/api/captures/${seg(id)}/progress`,
        (msg) => msg.state === 'done' || msg.state === 'error', onMessage, onFailure);
    },
    /**
     * Upload a capture with upload progress (XMLHttpRequest, the only browser API
     * that reports upload progress). onProgress(loaded, total). Resolves {id}.
     * Returns { promise, abort }.
     */
    uploadCapture(file, onProgress) {
      const xhr = new host.XMLHttpRequest();
      const promise = new Promise((resolve, reject) => {
        xhr.open('POST', `${base}/api/captures`);
        xhr.setRequestHeader('Accept', 'application/json');
        xhr.setRequestHeader('Accept-Language', host.i18n.lang);
        xhr.upload.onprogress = (e) => {
          if (onProgress) onProgress(e.loaded, e.lengthComputable ? e.total : file.size);
        };
        xhr.onload = () => {
          let data = null;
          try {
            data = JSON.parse(xhr.responseText);
          } catch {
            data = null;
          }
          if (xhr.status >= 200 && xhr.status < 300 && data && data.id !== undefined) resolve(data);
          else reject(new ApiError(xhr.status, detailText(host.i18n, data, xhr.status)));
        };
        xhr.onerror = () => reject(new ApiError(0, host.i18n.t('ui.http.network')));
        xhr.onabort = () => reject(new ApiError(0, host.i18n.t('ui.http.cancelled')));
        const form = new host.FormData();
        form.append('file', file, file.name);
        xhr.send(form);
      });
      return { promise, abort: () => xhr.abort() };
    },
  };
}
