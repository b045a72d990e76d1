// Virtual scrolling maths: which rows of a long fixed-height list are visible.
// DOM-free. Browsers cap an element's height (~16-33 million px), so beyond
// MAX_SCROLL_PX the scroll range is compressed: scrollTop maps linearly onto
// the first visible row instead of scrollTop / rowHeight.

export const MAX_SCROLL_PX = 8_000_000;

/** Height of the scrollable content for `total` rows. */
export function contentHeight(total, rowHeight, max = MAX_SCROLL_PX) {
  return Math.min(Math.max(0, total) * rowHeight, max);
}

/** Rows that fit entirely in the viewport. */
function fitRows(viewportHeight, rowHeight) {
  return Math.max(1, Math.floor(viewportHeight / rowHeight));
}

/** In compressed mode, the first visible row runs over [0, span]: the last rows then fit exactly. */
function compressedSpan(total, viewportHeight, rowHeight) {
  return Math.max(0, total - fitRows(viewportHeight, rowHeight));
}

/**
 * The rows to render.
 * Returns { start, end, top } — render rows [start, end) with row `start`
 * placed at `top` px from the top of the content (rows below follow every rowHeight).
 */
export function visibleRange({ scrollTop, viewportHeight, rowHeight, total, overscan = 4, max = MAX_SCROLL_PX }) {
  if (total <= 0 || rowHeight <= 0) return { start: 0, end: 0, top: 0 };
  const visible = Math.ceil(viewportHeight / rowHeight) + 1;
  const full = total * rowHeight;
  const height = contentHeight(total, rowHeight, max);
  let first;
  let top;
  if (full <= max) {
    first = Math.floor(Math.max(0, scrollTop) / rowHeight);
    top = first * rowHeight;
  } else {
    // Compressed: the scroll fraction picks the first row; rows are drawn from scrollTop.
    const range = Math.max(1, height - viewportHeight);
    const frac = Math.min(1, Math.max(0, scrollTop / range));
    first = Math.floor(frac * compressedSpan(total, viewportHeight, rowHeight));
    top = Math.max(0, scrollTop);
  }
  first = Math.min(first, Math.max(0, total - 1));
  const start = Math.max(0, first - overscan);
  const end = Math.min(total, first + visible + overscan);
  return { start, end, top: top - (first - start) * rowHeight };
}

/**
 * The scrollTop that shows row `index` (unchanged when it is already fully visible).
 */
export function scrollToReveal({ index, scrollTop, viewportHeight, rowHeight, total, max = MAX_SCROLL_PX }) {
  const full = total * rowHeight;
  if (full <= max) {
    const top = index * rowHeight;
    if (top < scrollTop) return top;
    if (top + rowHeight > scrollTop + viewportHeight) return Math.max(0, top + rowHeight - viewportHeight);
    return scrollTop;
  }
  const fit = fitRows(viewportHeight, rowHeight);
  const span = compressedSpan(total, viewportHeight, rowHeight);
  const range = Math.max(1, contentHeight(total, rowHeight, max) - viewportHeight);
  const first = Math.floor(Math.min(1, Math.max(0, scrollTop / range)) * span);
  if (index >= first && index < first + fit) return scrollTop;
  const target = Math.min(span, Math.max(0, index - Math.floor(fit / 2)));
  // Ceil so that floor(frac * span) lands exactly on target.
  return Math.min(range, Math.ceil((target / Math.max(1, span)) * range));
}

/** Is the view scrolled to (within a row of) the bottom? Used to follow a growing list. */
export function atBottom({ scrollTop, viewportHeight, rowHeight, total, max = MAX_SCROLL_PX }) {
  return scrollTop + viewportHeight >= contentHeight(total, rowHeight, max) - rowHeight;
}

/** Page numbers covering rows [start, end). */
export function pagesFor(start, end, pageSize) {
  const pages = [];
  if (end <= start) return pages;
  for (let p = Math.floor(start / pageSize); p <= Math.floor((end - 1) / pageSize); p++) pages.push(p);
  return pages;
}
