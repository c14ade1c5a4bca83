// The remote sign-in page: the capability arrives in the address's fragment (never sent to a
// server, so never in a log), is taken out of the address at once, and opens the ceremony once.
// From then on only a page token, held in this script's memory, talks to Steward's browser: a
// reload loses it, and the link cannot be opened again.
'use strict';

const status = document.getElementById('status');
const screen = document.getElementById('screen');
const show = (...ids) => ids.forEach((id) => { document.getElementById(id).hidden = false; });
const hide = (...ids) => ids.forEach((id) => { document.getElementById(id).hidden = true; });
let token = null;
let refreshing = null;
let refreshInFlight = false;
let over = false;
// Pictures that failed in a row: one taken while the website loads its next page may fail, and
// the next one succeeds; only a browser that keeps failing is reported.
let misses = 0;
const MISSES_REPORTED = 3;
const instructions = 'Sign in below, then choose \u201cI\u2019m signed in\u201d.';

const capability = new URLSearchParams(location.hash.slice(1)).get('c');
history.replaceState(null, '', location.pathname);

const explain = {
  'browser.capability_invalid': 'This sign-in link is not valid. Go back to Steward and start over.',
  'browser.capability_used': 'This sign-in link was already opened (a page that was reloaded cannot continue). Go back to Steward and start over.',
  'browser.ceremony_expired': 'This sign-in link expired. Go back to Steward and start over.',
  'browser.not_signed_in': 'The website has not signed you in yet. Sign in, then choose “I\u2019m signed in” again.',
  'browser.busy': 'Steward\u2019s browser is busy. Try again in a minute.',
  'browser.ceremony_cancelled': 'This sign-in was replaced or its website removed in Steward; nothing was kept. Go back to Steward.',
  'browser.ceremony_finishing': 'Your sign-in is still being kept. Wait a moment, then choose \u201cI\u2019m signed in\u201d again.',
  'browser.no_answer': 'Steward\u2019s browser did not answer. Try again, or go back to Steward and start over.',
};
const final = ['browser.capability_invalid', 'browser.capability_used', 'browser.ceremony_expired', 'browser.ceremony_cancelled'];
let finishing = false;

// How long the page waits for Steward's browser: every step the browser takes for this page is
// bounded, so an answer that does not come means the connection is gone.
const ANSWER_WITHIN = { '/sign-in/start': 120_000, '/sign-in/finish': 120_000 };

async function call(method, path, body) {
  const headers = { Authorization: `Bearer ${token ?? capability}` };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  let response;
  try {
    response = await fetch(path, {
      method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store',
      signal: AbortSignal.timeout(ANSWER_WITHIN[path] ?? 45_000),
    });
  } catch {
    throw Object.assign(new Error('browser.no_answer'), { code: 'browser.no_answer' });
  }
  if (!response.ok) {
    let code = 'browser.failed';
    try { code = (await response.json()).code ?? code; } catch { /* not a problem document */ }
    throw Object.assign(new Error(code), { code });
  }
  return response;
}

function stop(message) {
  clearInterval(refreshing);
  over = true;
  token = null;
  hide('screen-frame', 'typing', 'keys', 'actions');
  status.textContent = message;
}

// What went wrong, said on the page; nothing is said while the sign-in is being kept: the
// outcome of keeping it is what the page says next.
function failed(error) {
  if (over || finishing) return;
  if (final.includes(error.code)) {
    stop(explain[error.code]);
  } else {
    status.textContent = explain[error.code] ?? 'Something went wrong. Try again, or go back to Steward and start over.';
  }
}

async function refresh() {
  if (over) { clearInterval(refreshing); return; }
  if (!token || refreshInFlight || finishing) return;
  refreshInFlight = true;
  try {
    const picture = await (await call('GET', '/sign-in/screen')).blob();
    if (over || finishing) return;
    const previous = screen.src;
    screen.src = URL.createObjectURL(picture);
    if (previous) URL.revokeObjectURL(previous);
    // A picture again after failures: the page works again, and says what to do.
    if (misses >= MISSES_REPORTED) status.textContent = instructions;
    misses = 0;
  } catch (error) {
    misses += 1;
    if (final.includes(error.code) || misses >= MISSES_REPORTED) failed(error);
  } finally { refreshInFlight = false; }
}

// Inputs reach the website in the order they were given: a click that chooses a field is made
// before the text typed after it, however quickly one follows the other.
let inputs = Promise.resolve();
function send(input) {
  inputs = inputs.then(async () => {
    try { await call('POST', '/sign-in/input', input); await refresh(); } catch (error) { failed(error); }
  });
  return inputs;
}

// The website's width in the picture's pixels, from the last picture shown: while the next
// picture loads, the image may report no size, and a click then would land on the website's
// corner.
let pictureWidth = 0;
screen.addEventListener('load', () => { pictureWidth = screen.naturalWidth || pictureWidth; });
screen.addEventListener('click', (event) => {
  if (finishing || !pictureWidth) return;
  const box = screen.getBoundingClientRect();
  const scale = pictureWidth / box.width;
  send({ kind: 'click', x: (event.clientX - box.left) * scale, y: (event.clientY - box.top) * scale });
  document.getElementById('text').focus();
});
document.getElementById('typing').addEventListener('submit', (event) => {
  event.preventDefault();
  const field = document.getElementById('text');
  const text = field.value;
  field.value = '';
  if (text) send({ kind: 'text', text });
});
document.querySelectorAll('#keys button').forEach((button) => {
  button.addEventListener('click', () => send({ kind: 'key', key: button.dataset.key }));
});
const buttons = () => document.querySelectorAll('button');
document.getElementById('done').addEventListener('click', async () => {
  // No picture is asked for while the sign-in is kept, and no second tap sends anything.
  clearInterval(refreshing);
  finishing = true;
  buttons().forEach((button) => { button.disabled = true; });
  status.textContent = 'Keeping your sign-in…';
  // What was typed and pressed reaches the website first.
  await inputs;
  try {
    await call('POST', '/sign-in/finish');
    stop('You are signed in. Steward keeps this sign-in for its browser; you can close this page.');
  } catch (error) {
    finishing = false;
    failed(error);
    if (!over) {
      buttons().forEach((button) => { button.disabled = false; });
      refreshing = setInterval(refresh, 1000);
    }
  }
});
document.getElementById('close').addEventListener('click', async () => {
  try {
    await call('POST', '/sign-in/close');
    stop('Closed. Nothing was kept. Go back to Steward to start over.');
  } catch (error) {
    if (error.code === 'browser.ceremony_finishing') return;
    stop('Closed. Go back to Steward to start over.');
  }
});

async function open() {
  const retry = document.getElementById('retry');
  retry.disabled = true;
  try {
    const opened = await (await call('POST', '/sign-in/start')).json();
    if (over) return;
    token = opened.token;
    hide('retry');
    status.textContent = instructions;
    show('screen-frame', 'typing', 'keys', 'actions');
    await refresh();
    refreshing = setInterval(refresh, 1000);
  } catch (error) {
    failed(error);
    // Steward's browser did not start: the same link can be tried again while it lasts.
    if (!over) show('retry');
  } finally {
    retry.disabled = false;
  }
}
document.getElementById('retry').addEventListener('click', open);

if (!capability) {
  stop('This page was reloaded or opened without its link, so it cannot continue. Go back to Steward and start over.');
} else {
  open();
}
