// The language core (core/i18n.js): lookup, placeholders, plurals, English as the fallback, the
// choice of language from ?lang=, the remembered choice and the browser's languages, and catalogs
// fetched through an injected fetch.
import test from 'node:test';
import assert from 'node:assert/strict';
import { I18n, chooseLanguage, negotiate, matchLanguage, format, placeholders, useLanguage, catalogUrl } from '../../frontend/js/core/i18n.js';
import { readCatalog, pageI18n } from './i18n-setup.mjs';
import { messages, Message } from '../../frontend/js/core/i18n.js';
import { h, relabel } from '../../frontend/js/views/dom.js';
import { createDocument } from './fake-dom.mjs';

const catalogs = {
  en: { 'hello': 'Hello, {name}', 'only.en': 'English only', 'frames.one': '{count} frame', 'frames.other': '{count} frames' },
  'zh-CN': { 'hello': '你好，{name}', 'frames.one': '{count} 帧', 'frames.other': '{count} 帧' },
};

test('lookup with placeholders, in the language in force', () => {
  const i = new I18n({ catalogs, lang: 'zh-CN' });
  assert.equal(i.t('hello', { name: 'DEALER' }), '你好，DEALER');
  i.setLanguage('en');
  assert.equal(i.t('hello', { name: 'DEALER' }), 'Hello, DEALER');
});

test('a message missing in Chinese falls back to English; an unknown id shows itself', () => {
  const i = new I18n({ catalogs, lang: 'zh-CN' });
  assert.equal(i.t('only.en'), 'English only');
  assert.equal(i.t('no.such.id'), 'no.such.id');
});

test('counted messages pick .one or .other', () => {
  const i = new I18n({ catalogs, lang: 'en' });
  assert.equal(i.tn('frames', 1), '1 frame');
  assert.equal(i.tn('frames', 3), '3 frames');
  i.setLanguage('zh-CN');
  assert.equal(i.tn('frames', 3), '3 帧');
});

test('placeholders: an unknown one stays as written, zero is a value', () => {
  assert.equal(format('{a} and {b}', { a: 0 }), '0 and {b}');
  assert.equal(format('{{a}} is {a}', { a: 1 }), '{a} is 1');
  assert.deepEqual(placeholders('{b} {a} {b}'), ['a', 'b']);
});

test('listeners hear a change of language, not a repeat of the same one', () => {
  const i = new I18n({ catalogs, lang: 'en' });
  const heard = [];
  const stop = i.onChange((lang) => heard.push(lang));
  i.setLanguage('en');
  i.setLanguage('zh-CN');
  stop();
  i.setLanguage('en');
  assert.deepEqual(heard, ['zh-CN']);
});

test('negotiation: ?lang= first, then the remembered choice, then the browser, then English', () => {
  assert.equal(matchLanguage('zh-Hans-CN'), 'zh-CN');
  assert.equal(matchLanguage('zh_TW'), 'zh-CN');
  assert.equal(matchLanguage('en-GB'), 'en');
  assert.equal(matchLanguage('fr'), null);
  assert.equal(negotiate(['fr-FR', 'zh', 'en']), 'zh-CN');
  assert.equal(negotiate(['de', 'fr']), 'en');
  assert.equal(chooseLanguage({ search: '?session=3&lang=zh-CN', stored: 'en', languages: ['en'] }), 'zh-CN');
  assert.equal(chooseLanguage({ search: '?lang=en', stored: 'zh-CN', languages: ['zh-CN'] }), 'en');
  assert.equal(chooseLanguage({ search: '?lang=xx', stored: 'zh-CN', languages: ['en'] }), 'zh-CN');
  assert.equal(chooseLanguage({ search: '?lang=zh%', stored: 'zh-CN', languages: ['en'] }), 'zh-CN'); // (malformed: not thrown)
  assert.equal(chooseLanguage({ search: '', stored: null, languages: ['zh-CN', 'en'] }), 'zh-CN');
  assert.equal(chooseLanguage({ search: '', stored: null, languages: [] }), 'en');
});

test('useLanguage fetches English (the fallback) and the chosen catalog through the injected fetch', async () => {
  const asked = [];
  const fetch = async (url) => {
    asked.push(url);
    const lang = /i18n\/(.*)\.json$/.exec(url)[1];
    return { ok: true, status: 200, json: async () => catalogs[lang] };
  };
  const i = new I18n();
  assert.equal(await useLanguage(i, fetch, 'zh-CN'), 'zh-CN');
  assert.deepEqual(asked.sort(), [catalogUrl('en'), catalogUrl('zh-CN')]);
  assert.equal(i.t('only.en'), 'English only');
  await useLanguage(i, fetch, 'en');
  assert.equal(asked.length, 2, 'a loaded catalog is not fetched again');
  const broken = async () => ({ ok: false, status: 404 });
  await assert.rejects(useLanguage(new I18n(), broken, 'zh-CN'), /zh-CN catalog did not load \(HTTP 404\)|en catalog/);
});

test("the frontend's catalogs: the same ids and the same placeholders in both languages", () => {
  const en = readCatalog('en');
  const zh = readCatalog('zh-CN');
  assert.deepEqual(Object.keys(zh).sort(), Object.keys(en).sort());
  for (const id of Object.keys(en)) {
    assert.deepEqual(placeholders(zh[id]), placeholders(en[id]), id);
    assert.ok(zh[id].trim(), `${id} is empty in zh-CN`);
  }
});

test('what h() writes from the catalogs is rewritten in place when the language changes', () => {
  const i18n = pageI18n('en');
  const doc = createDocument();
  const words = messages(i18n, { start: 'ui.form.start', session: ['ui.session.title'], file: 'topology.json' });
  const root = h(doc, 'div', {},
    h(doc, 'button', { t: i18n.message('ui.form.start'), tTitle: i18n.message('ui.player.play.title') }),
    h(doc, 'span', { t: i18n.message('ui.session.title', { id: 7 }) }),
    h(doc, 'input', { tPlaceholder: i18n.message('ui.form.optional'), tLabel: i18n.message('ui.form.identity') }),
    h(doc, 'b', { text: words.session({ id: 8 }) }),
    h(doc, 'i', { text: words.start, attrs: { 'aria-label': words.start } }),
  );
  const [button, span, input, bold, italic] = root.childNodes;
  assert.equal(button.textContent, 'Start session');
  assert.ok(words.start instanceof Message);
  assert.equal(`${words.start}`, 'Start session');
  assert.equal(words.file, 'topology.json');
  try {
    i18n.setLanguage('zh-CN');
    relabel(root, i18n);
    assert.equal(button.textContent, '开始会话');
    assert.equal(button.getAttribute('title'), '播放 / 暂停（空格）');
    assert.equal(span.textContent, '会话 7');
    assert.equal(input.getAttribute('placeholder'), '可选');
    assert.equal(input.getAttribute('aria-label'), '身份');
    assert.equal(bold.textContent, '会话 8');
    assert.equal(italic.textContent, '开始会话');
    assert.equal(italic.getAttribute('aria-label'), '开始会话');
    assert.equal(`${words.start}`, '开始会话', 'a table read after the change speaks the new language');
  } finally {
    i18n.setLanguage('en');
  }
});

test('two pages, two languages: nothing of the language is held by a module (it comes with each page\'s host)', () => {
  const english = pageI18n('en');
  const chinese = pageI18n('zh-CN');
  const doc = createDocument();
  const a = h(doc, 'button', { t: english.message('ui.form.start') });
  const b = h(doc, 'button', { t: chinese.message('ui.form.start') });
  assert.equal(a.textContent, 'Start session');
  assert.equal(b.textContent, '开始会话');
  chinese.setLanguage('en');
  relabel(b, chinese);
  relabel(a, english);
  assert.equal(a.textContent, 'Start session', 'one page switching leaves the other as it was');
  assert.equal(b.textContent, 'Start session');
  assert.throws(() => h(doc, 'span', { t: 'ui.form.start' }), /takes a Message/, 'a bare id has no language to be said in');
});
