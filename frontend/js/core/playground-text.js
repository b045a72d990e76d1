// Every sentence the playground shows that is built from values: one table, so that a translation
// replaces it whole (whole sentences with named values, never sentences glued from fragments). DOM-free.

export const TEXT = {
  form: {
    autoplay: 'Play at once (otherwise the session waits at t = 0 for Step or Play)',
    greeting: 'Greeting',
    greetingOptions: {
      libzmq: "libzmq's: signature first, padding = identity length + 1",
      full: "23/ZMTP's full greeting: 64 octets at once, zero padding",
    },
    greetingHelp: "How this peer writes its greeting. libzmq sends the signature first, with the identity length + 1 as padding so that a ZMTP 1.0 peer reads it as a frame header; 23/ZMTP's full-greeting strategy sends all 64 octets at once with zero padding.",
    realLibzmq: 'a real libzmq socket (pyzmq)',
    realLibzmqHelp: 'libzmq 4.3 through pyzmq plays this side (real TCP sessions only)',
    topic: 'Subscribe to',
    topicHint: 'topic prefix; empty: everything',
  },
  composer: {
    routingId: ({ size }) => `routing id (${size} octet${size === 1 ? '' : 's'}): the ROUTER picks the connection with it; it never goes on the wire`,
    summary: ({ frames, octets }) => `${frames} frame${frames === 1 ? '' : 's'}, ${octets} octets on the wire. MORE is set on all frames but the last; frames over 255 octets use the long size.`,
    summaryRouter: ({ frames, octets }) => `${frames} frame${frames === 1 ? '' : 's'}, ${octets} octets on the wire (the routing id in frame 1 is not sent). MORE is set on all frames but the last; frames over 255 octets use the long size.`,
    queued: 'Queued: the session is paused, so this message goes on the wire with the next Step (or Play).',
    sent: 'Sent.',
  },
  marks: {
    open: ({ conn }) => `Connection ${conn} opens`,
    closed: ({ conn, side, reason }) => `Connection ${conn} closed by the ${side}: ${reason}`,
    closedError: ({ conn, side, error }) => `Connection ${conn} closed by the ${side} after ERROR "${error}"`,
    closedQuietly: ({ conn }) => `Connection ${conn} closed`,
    fault: {
      corrupt: ({ way, offset }) => `Fault: octet ${offset} of ${way} corrupted`,
      'corrupt-armed': ({ way, offset }) => `Fault armed: octet ${offset} of ${way} is corrupted when written`,
      split: ({ way }) => `Fault: ${way} goes one octet per TCP write`,
      delay: ({ way, until, seconds }) => (typeof until === 'number' ? `Fault: ${way} held until t = ${until} s` : `Fault: ${way} held for ${seconds} s`),
      close: ({ side }) => `Fault: the ${side} closes the connection`,
      garbage: ({ way, length }) => `Fault: ${length} octets of garbage written into ${way}`,
      wrong_mechanism: ({ peer, mechanism }) => `Fault: the ${peer} now announces ${mechanism}; it reconnects`,
      invalid_socket_pair: ({ peer, socket_type: type }) => `Fault: the ${peer} now announces ${type}; it reconnects`,
      zmtp_version: ({ peer, version }) => `Fault: the ${peer} now speaks ZMTP ${version}; it reconnects`,
      bad_password: ({ peer }) => `Fault: the ${peer} now sends a wrong password; it reconnects`,
      stop_answering: ({ peer }) => `Fault: the ${peer} stops answering (no PONG); the other side's heartbeat will time out`,
      kill: ({ peer }) => `Fault: the ${peer} is killed`,
      other: ({ fault }) => `Fault: ${fault}`,
    },
    dirs: { c2s: 'client → server', s2c: 'server → client' },
  },
};
