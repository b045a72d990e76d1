// External nodes of a real topology session (issue 34.1): where a program outside the lab joins, and what to run
// to join there. From the session's `topology` message: each node with `external: true` has `endpoint`
// (tcp://HOST:PORT, where its program connects; or, when the lab connects out, the program's own endpoint) and,
// when the app bridges ZWS peers in, `zws` (ws://HOST:PORT/zws-ID-NODE). No DOM: the playground's external panel
// shows what this makes.

const SENDS_FIRST = new Set(['PUSH', 'PUB', 'XPUB', 'REQ', 'DEALER', 'PAIR', 'CLIENT', 'RADIO']);
const RECEIVES = new Set(['PULL', 'SUB', 'XSUB', 'REQ', 'REP', 'DEALER', 'ROUTER', 'PAIR', 'SERVER', 'DISH']);

/**
 * The external nodes of a topology message's topology: [{ name, type, peer, endpoint, zws, listens, max, pyzmq,
 * command, commandZws }]: `listens`, the session waits for the node's program at `endpoint` (else the lab connects to
 * the program there); `peer`, the lab's node at the other end of its link; `pyzmq` and `command` (`zmtplab peer`), a
 * program that is the node; `commandZws`, the same over the app's ZWS endpoint.
 */
export function externalNodes(topology) {
  const nodes = (topology && topology.nodes) || [];
  const links = (topology && topology.links) || [];
  return nodes.filter((n) => n.external).map((n) => {
    const link = links.find((l) => l.connect === n.name || l.bind === n.name);
    const listens = n.listens === true;
    const endpoint = n.endpoint || '';
    return {
      name: n.name,
      type: n.type,
      peer: link ? (link.connect === n.name ? link.bind : link.connect) : null,
      endpoint,
      zws: n.zws || '',
      listens,
      max: n.max_connections || 1,
      pyzmq: endpoint ? pyzmqSnippet(n.type, endpoint, !listens, n.subscribe) : '',
      command: endpoint ? peerCommand(n.type, endpoint, !listens) : '',
      commandZws: n.zws ? peerCommand(n.type, n.zws, false) : '',
    };
  });
}

/** A pyzmq script that is node `type` at `endpoint` (it binds there when the lab connects to it). */
export function pyzmqSnippet(type, endpoint, binds = false, subscribe = []) {
  const lines = ['import zmq', '', 'ctx = zmq.Context()', `sock = ctx.socket(zmq.${type})`];
  if (type === 'SUB') lines.push(`sock.setsockopt(zmq.SUBSCRIBE, b${pyBytes((subscribe && subscribe[0]) || '')})`);
  if (binds) lines.push(`sock.bind("${bindEndpoint(endpoint)}")`);
  else lines.push(`sock.connect("${endpoint}")`);
  if (type === 'ROUTER') lines.push('identity, *message = sock.recv_multipart()', 'sock.send_multipart([identity, b"hello from python"])');
  else if (type === 'REP') lines.push('print(sock.recv_multipart())', 'sock.send(b"hello from python")');
  else {
    if (SENDS_FIRST.has(type)) lines.push('sock.send(b"hello from python")');
    if (RECEIVES.has(type)) lines.push('print(sock.recv_multipart())');
  }
  return lines.join('\n');
}

/** The `zmtplab peer` command that is node `type` at `endpoint` (tcp:// or ws://). */
export function peerCommand(type, endpoint, binds = false) {
  const words = ['zmtplab', 'peer', type, binds ? bindEndpoint(endpoint) : endpoint, binds ? '--bind' : '--connect'];
  if (type === 'SUB') words.push("--subscribe ''");
  if (SENDS_FIRST.has(type) || type === 'REP') words.push('--send hello');
  if (RECEIVES.has(type)) words.push('--recv 1');
  return words.join(' ');
}

function bindEndpoint(endpoint) {
  const port = endpoint.slice(endpoint.lastIndexOf(':') + 1);
  return `tcp://*:${port}`;
}

function pyBytes(text) {
  return JSON.stringify(text);
}
