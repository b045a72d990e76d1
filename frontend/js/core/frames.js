// One animation frame for all of a page's drawing. DOM-free.
//
// Every view that draws "at most once a frame" schedules its redraw here rather than asking for a frame of
// its own: the redraws run in one requestAnimationFrame callback, in the order they were scheduled, and a
// redraw scheduled while the frame runs (the page's flush touching a view) runs in the same frame, after
// it. So a page that takes a thousand messages a second draws what arrived since the last frame once,
// all its writes together, and the browser lays the page out once (a view drawing in a frame of its own
// after another view's writes, or a frame later, lays it out again). Each callback runs at most once a
// frame: one scheduled again by its own run waits for the next frame.
//
//   const frames = createFrameQueue((run) => win.requestAnimationFrame(run));
//   const redraw = frames.throttle(() => view.render());
//   redraw(); redraw();   // one render, in the next frame

/**
 * A queue of callbacks run together in the next frame; `requestFrame(run)` asks for that frame, `now()` (ms) is
 * the clock that says how long the frame has run so far (`spent`; none: 0).
 */
export function createFrameQueue(requestFrame, now = null) {
  let queue = [];
  let queued = new Set();
  let requested = false;
  let ran = null; // the callbacks run in the frame running now (null between frames)
  const later = []; // callbacks scheduled again by their own run in this frame
  let carried = []; // ...which the next frame runs after what is scheduled before it
  let started = null; // when the frame running now started (by `now`)

  function run(time) {
    requested = false;
    ran = new Set();
    started = now ? now() : null;
    // A callback that put itself off runs after what was scheduled since (the page's flush before its views).
    for (const fn of carried) {
      if (!queued.has(fn)) {
        queued.add(fn);
        queue.push(fn);
      }
    }
    carried = [];
    let failure = null;
    try {
      while (queue.length) {
        const fn = queue.shift();
        queued.delete(fn);
        ran.add(fn);
        try {
          fn(time);
        } catch (err) {
          failure = failure || err; // (the other views still draw; the first error is thrown after them)
        }
      }
    } finally {
      ran = null;
      started = null;
      carried = later.splice(0);
      if (carried.length) request();
    }
    if (failure) throw failure;
  }

  function request() {
    if (requested) return;
    requested = true;
    requestFrame(run);
  }

  /** Runs fn in the next frame (once, however often it is scheduled before then). */
  function schedule(fn) {
    if (ran && ran.has(fn)) {
      if (!later.includes(fn)) later.push(fn);
      return;
    }
    if (queued.has(fn)) return;
    queued.add(fn);
    queue.push(fn);
    if (!ran) request();
  }

  /** Runs fn in the next frame, never in the one running now (what must outlast this frame's work). */
  function nextFrame(fn) {
    if (!ran) schedule(fn);
    else if (!later.includes(fn)) later.push(fn);
  }

  return {
    schedule,
    nextFrame,
    /** A function that schedules fn (at most once a frame). */
    throttle: (fn) => () => schedule(fn),
    /**
     * How long (ms) the frame running now has run its callbacks so far (0 between frames or without a clock): a
     * callback whose work may wait a frame can leave it to the next when this one is already full.
     */
    spent() {
      return started === null || !now ? 0 : now() - started;
    },
    /** Whether anything waits for the next frame. */
    get pending() {
      return queue.length > 0 || later.length > 0 || carried.length > 0;
    },
  };
}

const queues = new WeakMap();

/**
 * The frame queue of a window (one per window: every view of a page shares it); a window without
 * requestAnimationFrame (or none) gets frames of 16 ms from `setTimeout`.
 */
export function frameQueue(win) {
  const key = win && typeof win === 'object' ? win : frameQueue;
  let q = queues.get(key);
  if (!q) {
    const raf = win && win.requestAnimationFrame ? (f) => win.requestAnimationFrame(f) : (f) => setTimeout(() => f(Date.now()), 16);
    const clock = win && win.performance && typeof win.performance.now === 'function' ? () => win.performance.now() : null;
    q = createFrameQueue(raf, clock);
    queues.set(key, q);
  }
  return q;
}
