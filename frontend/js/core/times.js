// Capture times, one convention on every panel: seconds since the capture's first packet (what the
// sequence shows), with the absolute UTC time, as Wireshark shows arrival times, on hover. DOM-free.

/** A capture timestamp (seconds since the epoch) as a UTC date with microseconds. */
export function absoluteTime(ts) {
  if (!(ts > 1e8 && ts < 1e11)) return `${ts.toFixed(6)} s`;
  const us = Math.round(ts * 1e6);
  const iso = new Date(Math.floor(us / 1e6) * 1000).toISOString().slice(0, 19).replace('T', ' ');
  return `${iso}.${String(us % 1e6).padStart(6, '0')} UTC`;
}

/** Seconds since `base` (the first packet), or `ts` itself without a base. */
export function relativeTime(ts, base) {
  const rel = typeof base === 'number' ? ts - base : ts;
  return rel.toFixed(Math.abs(rel) < 1000 ? 6 : 3);
}
