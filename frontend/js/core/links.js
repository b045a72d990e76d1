// Deep links and the playground's form vocabulary. DOM-free.
//
// capture.html?id=ID&conn=0&el=42&field=3&kind=frame&q=text
// index.html?session=ID&el=12&field=2        (a live session)
// index.html#paste                           (the paste tab)

const INT_KEYS = new Set(['el', 'field', 'at']);

/**
 * A URL component decoded: `%xx` escapes and `+` as a space. A malformed escape (`%`, `%zz`, an escape that is
 * not UTF-8) stays as it was typed rather than stopping the page (decodeURIComponent throws on it).
 */
export function decodeComponent(text) {
  const plain = String(text).replace(/\+/g, ' ');
  try {
    return decodeURIComponent(plain);
  } catch {
    // Each run of well-formed escapes on its own; what cannot be decoded is kept.
    return plain.replace(/(?:%[0-9A-Fa-f]{2})+/g, (run) => {
      try {
        return decodeURIComponent(run);
      } catch {
        return run;
      }
    });
  }
}

/** Parse a location's search string into { key: value }; el/field become integers. */
export function parseLink(search) {
  const out = {};
  const text = String(search || '').replace(/^\?/, '');
  if (!text) return out;
  for (const part of text.split('&')) {
    if (!part) continue;
    const eq = part.indexOf('=');
    const key = decodeComponent(eq < 0 ? part : part.slice(0, eq));
    const raw = eq < 0 ? '' : decodeComponent(part.slice(eq + 1));
    if (INT_KEYS.has(key)) {
      const n = Number.parseInt(raw, 10);
      if (Number.isFinite(n) && n >= 0) out[key] = n;
    } else out[key] = raw;
  }
  return out;
}

/** Build "?a=1&b=2" from an object, in a fixed key order, skipping empty values. */
export function buildLink(params, order = ['id', 'session', 'conn', 'el', 'field', 'kind', 'q']) {
  const keys = [...order.filter((k) => k in params), ...Object.keys(params).filter((k) => !order.includes(k))];
  const parts = [];
  for (const k of keys) {
    const v = params[k];
    if (v === undefined || v === null || v === '') continue;
    parts.push(`${encodeURIComponent(k)}=${encodeURIComponent(String(v))}`);
  }
  return parts.length ? '?' + parts.join('&') : '';
}

export const SOCKET_TYPES = ['REQ', 'REP', 'DEALER', 'ROUTER', 'PUB', 'XPUB', 'SUB', 'XSUB', 'PUSH', 'PULL', 'PAIR'];
export const VERSIONS = ['3.1', '3.0', '2.0', '1.0'];
export const MECHANISMS = ['NULL', 'PLAIN', 'CURVE'];
export const KINDS = ['greeting', 'command', 'frame', 'message', 'expert', 'gap'];

export const GREETINGS = ['libzmq', 'full'];

/**
 * The body of POST /api/sessions from the form's values.
 * peer: { type, version, mechanism, identity, username, password, libzmq, greeting, subscribe };
 * options: { autoplay } (false: the session waits at t = 0).
 */
export function sessionRequest(mode, server, client, { autoplay = false } = {}) {
  const tcp = mode === 'tcp';
  const peer = (p) => {
    const type = SOCKET_TYPES.includes(p.type) ? p.type : 'PAIR';
    const out = {
      type,
      version: VERSIONS.includes(p.version) ? p.version : '3.1',
      mechanism: MECHANISMS.includes(p.mechanism) ? p.mechanism : 'NULL',
      identity: p.identity || '',
      username: p.username || '',
      password: p.password || '',
      // A real libzmq socket exists only among real peers (tcp).
      libzmq: tcp && !!p.libzmq,
      greeting: GREETINGS.includes(p.greeting) ? p.greeting : 'libzmq',
    };
    // '' is the empty prefix (every message); null, no subscription at all: the SUB receives nothing, as in libzmq.
    if (type === 'SUB') out.subscribe = p.subscribe === null ? null : p.subscribe || '';
    return out;
  };
  return { mode: tcp ? 'tcp' : 'simulated', server: peer(server), client: peer(client), autoplay: !!autoplay };
}
