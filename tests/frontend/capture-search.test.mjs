// The capture viewer's search wording and its time convention (DOM-free cores).
import { en } from './i18n-setup.mjs'; // English words, as the page has them
import test from 'node:test';
import assert from 'node:assert/strict';
import { matchText } from '../../frontend/js/core/capture-search.js';
import { absoluteTime, relativeTime } from '../../frontend/js/core/times.js';

test('the count says where the search looked', () => {
  assert.equal(matchText(en, { total: 2 }, { scope: 'all', connections: 5 }), '2 matching in all 5 connections');
  assert.equal(matchText(en, { total: 1 }, { scope: 'all', connections: 1 }), '1 matching in the connection');
  assert.equal(matchText(en, { total: 0 }, { scope: 'conn', conn: '3', connections: 5 }), '0 matching in connection 3');
});

test('a search answered before its end says how far it got', () => {
  const res = { total: 1234, searched: 250000, elements: 21800000, partial: true };
  assert.equal(
    matchText(en, res, { scope: 'all', connections: 2 }),
    "1,234 matching so far in all 2 connections: searched 250,000 of 21,800,000 elements (the server answered with what it had found; Search further counts the rest)",
  );
  assert.equal(matchText(en, { ...res, partial: false, searched: 21800000 }, { scope: 'all', connections: 2 }), '1,234 matching in all 2 connections');
});

test('times: seconds since the first packet, the UTC time for hover', () => {
  assert.equal(relativeTime(1000.25, 1000), '0.250000');
  assert.equal(relativeTime(5000.5, 1000), '4000.500');
  assert.equal(absoluteTime(1700000000.000123), '2023-11-14 22:13:20.000123 UTC');
  assert.equal(absoluteTime(12.5), '12.500000 s');
});
