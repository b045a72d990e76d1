// The capture viewer's file (capture-file.js): deleting the open capture. Its requests in flight end before
// the DELETE goes, so none of them is answered 404 on a page still reading the capture.
import { en } from './i18n-setup.mjs'; // English words, as the page has them
import test from 'node:test';
import assert from 'node:assert/strict';
import { createDocument } from './fake-dom.mjs';
import { heldFetch } from './fakes.mjs';
import { createApi, jsonRequester } from '../../frontend/js/core/api.js';
import { createCaptureSearchApi } from '../../frontend/js/core/capture-search.js';
import { CaptureFile } from '../../frontend/js/app/capture/capture-file.js';

test('idle() waits for the requests in flight, those started meanwhile too', async () => {
  const net = heldFetch(() => [200, { ok: 1 }]);
  const request = jsonRequester({ i18n: en, fetch: net.fetch });
  let idle = false;
  const first = request('GET', '/a');
  request.idle().then(() => {
    idle = true;
  });
  const second = request('GET', '/b'); // started while idle() waits for the first
  await net.release(1);
  assert.deepEqual(await first, { ok: 1 });
  assert.equal(idle, false);
  await net.release();
  assert.deepEqual(await second, { ok: 1 });
  await net.release(0);
  assert.equal(idle, true);
  assert.deepEqual(net.log, ['GET /a', 'GET /b']);
});

/** A capture page's file part over a fake DOM and a held network; `closed` records the page's closed(id). */
function captureFile(routes) {
  const net = heldFetch(routes);
  const doc = createDocument();
  const els = {};
  for (const id of ['upload', 'my-captures', 'upload-section', 'open-another', 'capture-section']) {
    els[id] = doc.createElement(id === 'my-captures' ? 'ul' : 'div');
    els[id].id = id;
  }
  const host = { i18n: en, fetch: net.fetch };
  const seen = { statuses: [], urls: [], closed: [] };
  const page = {
    i18n: en,
    api: createApi(host),
    searchApi: createCaptureSearchApi(host),
    status: (text, kind) => seen.statuses.push([text, kind || '']),
    setUrl: (params) => seen.urls.push(params),
    show: () => {},
    shownLink: () => ({}),
    closed: (id) => seen.closed.push(id),
  };
  const file = new CaptureFile({ getElementById: (id) => els[id] }, page);
  return { file, net, els, page, ...seen };
}

test('deleting the open capture closes it, waits for its requests, then deletes it', async () => {
  const routes = (method, url) => {
    if (method === 'DELETE') return [204, undefined];
    if (url === '/api/corpus/captures') return [200, { captures: [] }];
    return [200, { events: [], total: 0 }];
  };
  const { file, net, els, page, closed, statuses, urls } = captureFile(routes);
  file.id = '7';
  file.summary = { id: '7', name: 'x.pcapng' };
  const reading = page.api.captureEvents('7', { conn: '1' }); // the open connection's page, still on its way
  const deleting = file.delete('7', 'x.pcapng');
  assert.deepEqual(closed, ['7']); // the page let go of the capture at once ...
  assert.equal(file.id, null);
  assert.equal(els['capture-section'].hidden, true);
  assert.deepEqual(urls.at(-1), {});
  await net.release(0);
  assert.deepEqual(net.log, ['GET /api/captures/7/events?conn=1&offset=0&limit=200&fields=0']); // ... and no DELETE yet
  await net.release(); // the page's reply comes (200: the capture is still there)
  assert.deepEqual(await reading, { events: [], total: 0 });
  assert.equal(net.log.at(-1), 'DELETE /api/captures/7');
  await net.release();
  await deleting;
  assert.deepEqual(statuses.at(-1), ['Deleted x.pcapng from the server.', '']);
  assert.equal(els['upload-section'].hidden, false);
});

test('a delete the server refuses opens the capture again', async () => {
  const routes = (method, url) => {
    if (method === 'DELETE') return [500, { detail: 'disk on fire' }];
    if (url === '/api/captures/7') return [200, { id: '7', name: 'x.pcapng', state: 'done', connections: [] }];
    return [200, {}];
  };
  const { file, net, statuses, urls } = captureFile(routes);
  file.id = '7';
  const deleting = file.delete('7', 'x.pcapng');
  await net.release(0);
  await net.release(); // the DELETE's answer
  await deleting;
  assert.deepEqual(statuses.at(-1), ['Could not delete x.pcapng: disk on fire', 'error']);
  assert.equal(file.id, '7');
  assert.deepEqual(urls.at(-1), { id: '7' });
  assert.equal(net.log.at(-1), 'GET /api/captures/7');
});

test('a page request that never ends holds the delete back for ten seconds at most', async (t) => {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const { file, net, page, statuses } = captureFile((method) => (method === 'DELETE' ? [204, undefined] : [200, {}]));
  file.id = '7';
  page.api.captureEvents('7', { conn: '1' }); // never answered
  const deleting = file.delete('7', 'x.pcapng');
  await net.release(0);
  assert.deepEqual(statuses.at(-1), ['Deleting x.pcapng…', '']);
  t.mock.timers.tick(9_999);
  await net.release(0);
  assert.equal(net.log.length, 1, 'no DELETE yet');
  t.mock.timers.tick(1);
  await net.release(0);
  assert.equal(net.log.at(-1), 'DELETE /api/captures/7');
  await net.release(); // (the DELETE's answer; the page request's too, now)
  await deleting;
  assert.deepEqual(statuses.at(-1), ['Deleted x.pcapng from the server.', '']);
});
