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

const capability = new URLSearchParams(location.hash.slice(1)).get('c');
history.replaceState(null, '', location.pathname);

const explain = {
  'browser.capability_invalid': 'This sign-in link is not valid. Go back to Steward and start over.',
  'browser.capability_used': 'This sign-in link was already opened (a page that was reloaded cannot continue). Go back to Steward and start over.',
  'browser.ceremony_expired': 'This sign-in link expired. Go back to Steward and start over.',
  'browser.not_signed_in': 'The website has not signed you in yet. Sign in, then choose “I\u2019m signed in” again.',
  'browser.busy': 'Steward\u2019s browser is busy. Try again in a minute.',
  'browser.ceremony_cancelled': 'This sign-in was replaced or its website removed in Steward; nothing was kept. Go back to Steward.',
};
const final = ['browser.capability_invalid', 'browser.capability_used', 'browser.ceremony_expired', 'browser.ceremony_cancelled'];
let finishing = false;

async function call(method, path, body) {
  const headers = { Authorization: `Bearer ${token ?? capability}` };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' });
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

function failed(error) {
  if (over) return;
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
    if (over) return;
    const previous = screen.src;
    screen.src = URL.createObjectURL(picture);
    if (previous) URL.revokeObjectURL(previous);
  } catch (error) { failed(error); } finally { refreshInFlight = false; }
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

screen.addEventListener('click', (event) => {
  if (finishing) return;
  const box = screen.getBoundingClientRect();
  const scale = screen.naturalWidth / box.width;
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
    status.textContent = 'Sign in below, then choose “I\u2019m signed in”.';
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
