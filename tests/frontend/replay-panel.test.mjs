// The replay box's changes, as `zmtplab replay --set` takes them.
import test from 'node:test';
import assert from 'node:assert/strict';
import { changeText, REPLAY_OPTIONS } from '../../frontend/js/app/playground/replay-panel.js';

test('a change is NODE.OPTION=VALUE, its value trimmed', () => {
  assert.equal(changeText('sub2', 'connect_at', ' 0 '), 'sub2.connect_at=0');
  assert.equal(changeText('dealer', 'heartbeat_ttl', '60'), 'dealer.heartbeat_ttl=60');
});

test('an empty value is no change, except an empty subscription (every message)', () => {
  assert.equal(changeText('sub1', 'sndhwm', ''), null);
  assert.equal(changeText('sub1', 'subscribe', ''), 'sub1.subscribe=');
  assert.equal(changeText('', 'sndhwm', '4'), null);
  assert.equal(changeText('sub1', 'colour', 'red'), null);
});

test("the options are the CLI's", () => {
  for (const o of ['connect_at', 'subscribe_at', 'sndhwm', 'rcvhwm', 'heartbeat_ivl', 'heartbeat_timeout', 'heartbeat_ttl', 'version']) {
    assert.ok(REPLAY_OPTIONS.includes(o), o);
  }
});
