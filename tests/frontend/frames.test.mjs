// Drawing at a thousand messages a second (issue 19): the page's one frame queue (core/frames.js), and the
// sequence view drawing what arrived since the last frame without reading the layout and without making
// again the rows that still show what they showed.
import { en, pageI18n } from './i18n-setup.mjs'; // English words, as the page has them
import test from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createFrameQueue, frameQueue } from '../../frontend/js/core/frames.js';
import { createHighlighter } from '../../frontend/js/lessons/highlights.js';
import { createDocument, walk } from './fake-dom.mjs';
import { SequenceView } from '../../frontend/js/views/sequence.js';
import { ArraySource } from '../../frontend/js/core/source.js';
import { EventLog } from '../../frontend/js/core/eventlog.js';

/** A queue over frames the test runs by hand: frame() runs the one callback asked for, if any. */
function manualFrames() {
  const asked = [];
  const queue = createFrameQueue((run) => asked.push(run));
  return {
    queue,
    asked,
    frame(time = 0) {
      const run = asked.shift();
      if (run) run(time);
      return !!run;
    },
  };
}

test('nextFrame: asked for during a frame it waits for the next one; between frames, the next one', () => {
  const { queue, frame } = manualFrames();
  const ran = [];
  const later = () => ran.push('later');
  queue.schedule(() => {
    ran.push('draw');
    queue.nextFrame(later);
    queue.nextFrame(later);
  });
  frame();
  assert.deepEqual(ran, ['draw']);
  frame();
  assert.deepEqual(ran, ['draw', 'later']);
  queue.nextFrame(later);
  assert.ok(frame());
  assert.deepEqual(ran, ['draw', 'later', 'later']);
  assert.equal(frame(), false);
});

test('what is scheduled before a frame runs once in it, in order, with one request for the frame', () => {
  const { queue, asked, frame } = manualFrames();
  const ran = [];
  const a = queue.throttle(() => ran.push('a'));
  const b = queue.throttle(() => ran.push('b'));
  for (let i = 0; i < 1000; i++) {
    a();
    b();
  }
  assert.equal(asked.length, 1, 'a thousand redraws asked for one frame');
  assert.equal(queue.pending, true);
  frame();
  assert.deepEqual(ran, ['a', 'b']);
  assert.equal(queue.pending, false);
  assert.equal(frame(), false, 'nothing left for the next frame');
});

test('a redraw scheduled while the frame runs runs in the same frame, after what scheduled it', () => {
  const { queue, asked, frame } = manualFrames();
  const ran = [];
  const view = queue.throttle(() => ran.push('view'));
  const page = queue.throttle(() => {
    ran.push('page');
    view(); // (the page's flush gives the view new rows)
  });
  page();
  frame();
  assert.deepEqual(ran, ['page', 'view'], 'the view drew in the frame of the flush, not a frame later');
  assert.equal(asked.length, 0);
});

test('a callback that schedules itself waits for the next frame (no endless frame)', () => {
  const { queue, asked, frame } = manualFrames();
  let n = 0;
  const tick = queue.throttle(() => {
    n++;
    tick();
  });
  tick();
  frame();
  assert.equal(n, 1);
  assert.equal(asked.length, 1, 'the next frame is asked for');
  frame();
  assert.equal(n, 2);
});

test('a callback that throws does not cost the others their frame; the error is thrown after them', () => {
  const { queue, frame } = manualFrames();
  const ran = [];
  queue.schedule(() => {
    throw new Error('broken view');
  });
  queue.schedule(() => ran.push('after'));
  assert.throws(() => frame(), /broken view/);
  assert.deepEqual(ran, ['after']);
  queue.schedule(() => ran.push('next'));
  frame();
  assert.deepEqual(ran, ['after', 'next'], 'the queue still works');
});

test('one queue per window, shared by every view of the page', () => {
  const win = { requestAnimationFrame: () => 1 };
  assert.equal(frameQueue(win), frameQueue(win));
  assert.notEqual(frameQueue(win), frameQueue({ requestAnimationFrame: () => 1 }));
});

test("a lesson's highlights are lit in the page's one frame, after the views' redraws (no frame of their own)", () => {
  const asked = [];
  const win = { requestAnimationFrame: (run) => asked.push(run) };
  const ran = [];
  const octets = { querySelectorAll: () => (ran.push('highlights'), []) };
  const selection = { get: () => ({ index: 3, event: {} }), subscribe: () => {} };
  const highlighter = createHighlighter({ win, slots: { octets }, selection, hex: null });
  const redraw = frameQueue(win).throttle(() => ran.push('view'));
  redraw();
  highlighter.set(3, [{ field: 0, offset: 0, length: 1, dir: 'c2s' }], 'c2s');
  assert.equal(asked.length, 1, 'one frame asked for, the views\' and the highlights\' together');
  asked.shift()(0);
  assert.deepEqual(ran, ['view', 'highlights']);
});

test('no module but core/frames.js asks the browser for a frame: every deferred redraw goes through it', () => {
  const root = fileURLToPath(new URL('../../frontend/js/', import.meta.url));
  const own = [];
  for (const file of fs.readdirSync(root, { recursive: true })) {
    if (!String(file).endsWith('.js') || path.normalize(String(file)) === path.normalize('core/frames.js')) continue;
    const text = fs.readFileSync(path.join(root, String(file)), 'utf8');
    if (/requestAnimationFrame/.test(text)) own.push(String(file));
  }
  assert.deepEqual(own, []);
});

// ---- the sequence view on the fake DOM -------------------------------------------------------------------

/** A document whose window has a ResizeObserver (reporting once, as a browser does after layout) and whose
 * sequence viewport counts the layout reads made outside that report. */
function measuredDocument() {
  const doc = createDocument();
  const reads = { n: 0, inResize: false };
  doc.defaultView.ResizeObserver = class {
    constructor(fn) {
      this.fn = fn;
    }
    observe() {
      reads.inResize = true;
      try {
        this.fn([]);
      } finally {
        reads.inResize = false;
      }
    }
    disconnect() {}
  };
  const watch = (el, values) => {
    for (const prop of ['scrollTop', 'clientHeight', 'offsetHeight']) {
      let value = values[prop] ?? 0;
      Object.defineProperty(el, prop, {
        get() {
          // (reading the scroll back right after writing it costs nothing: the write laid the page out)
          if (prop === 'scrollTop' && reads.fresh) reads.fresh = false;
          else if (!reads.inResize) reads.n++;
          return value;
        },
        set(v) {
          if (prop === 'scrollTop') {
            reads.scrolls = (reads.scrolls || 0) + 1;
            reads.fresh = true;
          }
          // (a browser clamps the scroll to the content; the fake content is the spacer)
          value = prop === 'scrollTop' ? Math.max(0, Math.min(v, parseInt(values.spacer().style.height || '0', 10) - 300)) : v;
        },
        configurable: true,
      });
    }
  };
  return { doc, reads, watch };
}

const event = (i) => ({ seq: i, kind: 'frame', dir: i % 2 ? 's2c' : 'c2s', length: 5, hex: '0003616263', ts: i / 1000 });

test('the sequence follows a busy tail: one frame draws all that arrived, reading no layout, scrolled last', () => {
  const { doc, reads, watch } = measuredDocument();
  const box = doc.createElement('div');
  const events = [];
  const source = new ArraySource(events);
  // The viewport is 300 px tall (10 rows of 30); the test counts what the view reads of it.
  const view = new SequenceView(box, { i18n: en, source: null, rowHeight: 30 });
  const viewport = view.viewport;
  watch(viewport, { clientHeight: 300, spacer: () => view.spacer });
  // The resize report (after layout) tells the view its height; from here on, no layout read.
  new doc.defaultView.ResizeObserver(() => {
    view.height = viewport.clientHeight;
  }).observe(viewport);
  view.setSource(source);
  view.setFollowTail(true);
  doc.flush();
  reads.n = 0;
  const frames = [];
  reads.scrolls = 0;
  for (let batch = 0; batch < 50; batch++) {
    // A thousand messages a second: ~80 elements between two frames, each its own websocket event.
    for (let k = 0; k < 80; k++) {
      events.push(event(events.length));
      source.set(events);
    }
    doc.flush();
    frames.push(walk(view.rows).filter((el) => el.classList.contains('seq-row')).map((r) => Number(r.dataset.index)));
  }
  assert.equal(reads.n, 0, 'no scrollTop/clientHeight/offsetHeight read while following (each forces a layout mid-frame)');
  assert.equal(reads.scrolls, 50, 'one scroll a frame, to the new tail');
  const last = frames.at(-1);
  assert.equal(last.at(-1), events.length - 1, 'the last row drawn is the last element');
  assert.ok(last.length >= 10 && last.length < 30, `only the rows in view (${last.length})`);
  assert.deepEqual(last, [...last].sort((a, b) => a - b), 'rows in order');
  assert.match(view.countEl.textContent, /4,000 elements/);
});

test('rows that still show what they showed are kept: a selection makes two rows, not the screenful', () => {
  const doc = createDocument();
  const box = doc.createElement('div');
  const events = Array.from({ length: 200 }, (_, i) => event(i));
  const view = new SequenceView(box, { i18n: en, source: new ArraySource(events), rowHeight: 30 });
  view.viewport.clientHeight = 300;
  doc.flush();
  const rowsBefore = walk(view.rows).filter((el) => el.classList.contains('seq-row'));
  const made = doc.created.length;
  view.setSelected(3);
  doc.flush();
  const rowsAfter = walk(view.rows).filter((el) => el.classList.contains('seq-row'));
  assert.deepEqual(rowsAfter.map((r) => r.dataset.index), rowsBefore.map((r) => r.dataset.index));
  const remade = rowsAfter.filter((r, i) => r !== rowsBefore[i]).map((r) => Number(r.dataset.index));
  assert.deepEqual(remade, [3], 'only the newly selected row is drawn again');
  assert.ok(rowsAfter.find((r) => r.dataset.index === '3').classList.contains('selected'));
  assert.ok(doc.created.length - made < 30, `a few elements made (${doc.created.length - made})`);
  // Moving the selection: the old row loses its mark, the new one gets it.
  view.setSelected(4);
  doc.flush();
  const rows = walk(view.rows).filter((el) => el.classList.contains('seq-row'));
  assert.deepEqual(rows.filter((r) => r.classList.contains('selected')).map((r) => r.dataset.index), ['4']);
  // Scrolling down by two rows keeps the rows still in view and adds those that came into it, in order.
  view.viewport.scrollTop = 60;
  view.viewport.dispatch('scroll');
  doc.flush();
  const scrolled = walk(view.rows).filter((el) => el.classList.contains('seq-row'));
  const indexes = scrolled.map((r) => Number(r.dataset.index));
  assert.deepEqual(indexes, [...indexes].sort((a, b) => a - b));
  assert.equal(indexes[0], 0);
  assert.ok(scrolled.filter((r) => rows.includes(r)).length >= rows.length - 1, 'the rows still in view were kept');
  // A highlight changes every row's look: all drawn again.
  view.setHighlight((ev) => ev.seq === 5);
  doc.flush();
  const lit = walk(view.rows).filter((el) => el.classList.contains('seq-row') && el.classList.contains('on-path'));
  assert.deepEqual(lit.map((r) => r.dataset.index), ['5']);
});

test("a session's state message with nothing to drop costs no pass over the elements", () => {
  const log = new EventLog();
  for (let i = 0; i < 1000; i++) log.add(event(i));
  log.events.filter = () => {
    throw new Error('a pass over every element');
  };
  assert.equal(log.truncate(1000), false, 'the position is past every element: nothing goes');
  assert.equal(log.truncate(5000), false);
  delete log.events.filter;
  assert.equal(log.truncate(990), true, 'a step back still drops the elements after it');
  assert.equal(log.length, 990);
  assert.equal(log.truncate(990), false);
  log.add(event(990));
  assert.equal(log.truncate(990), true, 'the highest seq follows what is added again');
});

test('a flooded tail is drawn at most 20 times a second, a slow one every frame; the last rows are always drawn', () => {
  const doc = createDocument();
  // Frames at 60 Hz with their times, as a browser gives them.
  const waiting = [];
  let clock = 0;
  doc.defaultView.requestAnimationFrame = (fn) => waiting.push(fn);
  const frame = () => {
    clock += 1000 / 60;
    for (const fn of waiting.splice(0)) fn(clock);
  };
  const box = doc.createElement('div');
  const events = [];
  const source = new ArraySource(events);
  const view = new SequenceView(box, { i18n: en, source, rowHeight: 30 });
  view.viewport.clientHeight = 300; // (10 rows)
  view.setFollowTail(true);
  frame();
  const lastRow = () => Math.max(...walk(view.rows).filter((el) => el.classList.contains('seq-row')).map((r) => Number(r.dataset.index)));
  const drawn = (perFrame, frames) => {
    let draws = 0;
    for (let f = 0; f < frames; f++) {
      const before = lastRow();
      for (let k = 0; k < perFrame; k++) {
        events.push(event(events.length));
        source.set(events);
      }
      frame();
      if (lastRow() !== before) draws++;
    }
    return draws;
  };
  // A thousand messages a second: 80 elements a frame, eight screenfuls; a second of it.
  const flooded = drawn(80, 60);
  assert.ok(flooded >= 15 && flooded <= 21, `the flooded tail was drawn ${flooded} times in a second`);
  for (let f = 0; f < 4; f++) frame();
  assert.equal(lastRow(), events.length - 1, 'once the flood stops, the last element is drawn');
  // A slow session (two elements a frame): every frame draws.
  assert.equal(drawn(2, 30), 30);
  assert.equal(lastRow(), events.length - 1);
});

test('the frame says how long it has run: spent() by the clock given, 0 between frames', () => {
  let clock = 100;
  const asked = [];
  const queue = createFrameQueue((run) => asked.push(run), () => clock);
  const seen = [];
  queue.schedule(() => {
    clock += 7;
  });
  queue.schedule(() => seen.push(queue.spent()));
  assert.equal(queue.spent(), 0);
  asked.shift()(0);
  assert.deepEqual(seen, [7]);
  assert.equal(queue.spent(), 0);
  assert.equal(createFrameQueue(() => {}).spent(), 0, 'no clock: 0');
});

test('a flooded tail waits a frame when the frame is full already (at most twice as long), never longer', () => {
  const doc = createDocument();
  const waiting = [];
  let clock = 0; // the frames' times
  let wall = 0; // performance.now(): a full frame takes 10 ms before the sequence draws
  doc.defaultView.requestAnimationFrame = (fn) => waiting.push(fn);
  doc.defaultView.performance = { now: () => wall };
  const queue = frameQueue(doc.defaultView);
  const heavy = () => {
    wall += 10; // (the diagram's figures, say)
  };
  const frame = () => {
    clock += 1000 / 60;
    for (const fn of waiting.splice(0)) fn(clock);
  };
  // What arrives between two frames; in a full frame something heavy runs first (the page's flush runs before
  // the views it gives rows to).
  const arrive = (full) => {
    if (full) queue.schedule(heavy);
    for (let k = 0; k < 80; k++) events.push(event(events.length));
    source.set(events);
  };
  const events = [];
  const source = new ArraySource(events);
  const view = new SequenceView(doc.createElement('div'), { i18n: en, source, rowHeight: 30 });
  view.viewport.clientHeight = 300;
  view.setFollowTail(true);
  frame();
  const lastRow = () => Math.max(...walk(view.rows).filter((el) => el.classList.contains('seq-row')).map((r) => Number(r.dataset.index)));
  const draws = (full) => {
    let n = 0;
    for (let f = 0; f < 60; f++) {
      const before = lastRow();
      arrive(full(f));
      frame();
      if (lastRow() !== before) n++;
    }
    return n;
  };
  // Every frame full: the tail is still drawn, ten times a second (twice FLOOD_MS).
  const always = draws(() => true);
  assert.ok(always >= 9 && always <= 11, `drawn ${always} times in a second of full frames`);
  // Every other frame full: the draws fall in the light ones.
  let inFull = 0;
  for (let f = 0; f < 60; f++) {
    const before = lastRow();
    arrive(f % 2 === 0);
    frame();
    if (lastRow() !== before && f % 2 === 0 && f >= 6) inFull++; // (after the change of pace)
  }
  assert.equal(inFull, 0, 'no flooded draw in a full frame when a light one comes next');
  for (let f = 0; f < 8; f++) frame();
  assert.equal(lastRow(), events.length - 1, 'once the flood stops, the last element is drawn');
});

test('another language redraws the kept rows and the count', () => {
  const i18n = pageI18n('en'); // (its own: this test switches it)
  const doc = createDocument();
  const events = Array.from({ length: 20 }, (_, i) => event(i));
  const view = new SequenceView(doc.createElement('div'), { i18n, source: new ArraySource(events), rowHeight: 30 });
  view.viewport.clientHeight = 300;
  doc.flush();
  const english = walk(view.rows).filter((el) => el.classList.contains('seq-row')).map((r) => r.textContent);
  const count = view.countEl.textContent;
  try {
    i18n.setLanguage('zh-CN');
    doc.flush();
    const chinese = walk(view.rows).filter((el) => el.classList.contains('seq-row')).map((r) => r.textContent);
    assert.notDeepEqual(chinese, english, 'the rows speak the new language');
    assert.notEqual(view.countEl.textContent, count);
  } finally {
    i18n.setLanguage('en');
  }
});
