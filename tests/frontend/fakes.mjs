// The node tests' stand-ins for the browser's network globals (a page's host): fetch (answering at once, or
// when the test lets it), WebSocket and EventSource. One copy each, shared by tests/frontend and tests/lessons.

/**
 * A fetch answering from `routes(url, init) -> [status, body]` (body an object, or undefined for
 * none). `calls` records each request as { url, method, body } (the body parsed).
 */
export function fakeFetch(routes) {
  const calls = [];
  const fetch = async (url, init) => {
    calls.push({ url, method: init.method, body: init.body ? JSON.parse(init.body) : undefined });
    const [status, body] = routes(url, init);
    return { ok: status >= 200 && status < 300, status, text: async () => (body === undefined ? '' : JSON.stringify(body)) };
  };
  return { fetch, calls };
}

/**
 * A fetch whose answers wait until the test lets them go: `log` lists each request as it is sent and
 * `release(n)` answers the first n waiting (FIFO), from `routes(method, url) -> [status, body]`.
 */
export function heldFetch(routes) {
  const log = [];
  const waiting = [];
  const fetch = (url, init) => {
    log.push(`${init.method} ${url}`);
    return new Promise((resolve) => {
      waiting.push(() => {
        const [status, body] = routes(init.method, url);
        resolve({ ok: status >= 200 && status < 300, status, text: async () => (body === undefined ? '' : JSON.stringify(body)) });
      });
    });
  };
  const release = async (n = waiting.length) => {
    for (const answer of waiting.splice(0, n)) answer();
    for (let i = 0; i < 10; i += 1) await Promise.resolve(); // (let the awaits after each answer run)
  };
  return { fetch, log, release, waiting };
}

/**
 * A WebSocket constructor; `sockets` lists what it made. A socket keeps its `url` and what was
 * sent, parsed (`sent`); the test plays the server by calling its onopen/onmessage/onclose
 * handlers. close() ends it with code 1000, as a browser reports a close it asked for.
 */
export function fakeWebSocket() {
  const sockets = [];
  class FakeWebSocket {
    constructor(url) {
      this.url = url;
      this.sent = [];
      this.closed = false;
      sockets.push(this);
    }
    send(text) {
      this.sent.push(JSON.parse(text));
    }
    close() {
      this.closed = true;
      if (this.onclose) this.onclose({ code: 1000 });
    }
  }
  return { WebSocket: FakeWebSocket, sockets };
}

/** An EventSource constructor; `sources` lists what it made, each with its `url` and `closed`. */
export function fakeEventSource() {
  const sources = [];
  class FakeEventSource {
    constructor(url) {
      this.url = url;
      this.closed = false;
      sources.push(this);
    }
    close() {
      this.closed = true;
    }
  }
  return { EventSource: FakeEventSource, sources };
}
